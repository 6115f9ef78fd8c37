import CloakCore
import CloakHTTP

/// A token's policies compiled once (issue 77), and the one question every door asks: may this
/// token do `operation` with this value, and how does the value leave? Rules are sorted at
/// load by operation and effect, so a decision reads only the rules of its operation, allocates
/// nothing that grows with them, and is the same whichever node or order of rules decides it.
struct TokenAccess: Sendable {
    struct Decision: Sendable, Equatable {
        enum Outcome: Sendable, Equatable {
            case allow(ValueTransform)
            case deny
        }

        var outcome: Outcome
        /// The policy and rule that decided; both nil for a token without policies, the rule nil
        /// for a default deny (no rule allowed it) or a policy the node does not hold.
        var policy: String?
        var rule: String?
        /// An operation to count in the store before the value leaves (the deciding rule has a
        /// quota); refused there, the door denies.
        var quota: QuotaCharge?
        /// What a policy in dry run would have decided instead, when stricter.
        var wouldHave: DryRun?

        static let unrestricted = Decision(outcome: .allow(.plain))
    }

    struct QuotaCharge: Sendable, Equatable {
        var policy: String
        var rule: String
        var perHour: Int
    }

    struct DryRun: Sendable, Equatable {
        var outcome: Decision.Outcome
        var policy: String?
        var rule: String?
    }

    private struct Compiled: Sendable {
        var policy: String
        var rule: PolicyRule
        var transform: ValueTransform?
    }

    /// A rule list a kind (enforced or dry run, deny or allow) an operation.
    private struct Rules: Sendable {
        var denies: [[Compiled]] = Array(repeating: [], count: PolicyOperation.allCases.count)
        var allows: [[Compiled]] = Array(repeating: [], count: PolicyOperation.allCases.count)
        var isEmpty = true

        mutating func add(_ rule: PolicyRule, of policy: String) {
            isEmpty = false
            for operation in rule.operations {
                let index = PolicyOperation.allCases.firstIndex(of: operation)!
                switch rule.effect {
                case .deny: denies[index].append(Compiled(policy: policy, rule: rule, transform: nil))
                case let .allow(transform):
                    allows[index].append(Compiled(policy: policy, rule: rule, transform: transform))
                }
            }
        }
    }

    /// A token's rules, compiled once: shared by every copy of the token (a request copies its
    /// token; a reference keeps that one retain, and none for a token without policies).
    private final class Tables: Sendable {
        let enforced: Rules
        /// Enforced and dry-run rules together: what the token would get were the dry runs enforced.
        let tried: Rules
        let hasDryRun: Bool
        /// A policy the token names that the node does not hold: every decision denies.
        let missing: String?

        init(enforced: Rules, tried: Rules, hasDryRun: Bool, missing: String?) {
            self.enforced = enforced
            self.tried = tried
            self.hasDryRun = hasDryRun
            self.missing = missing
        }
    }

    /// Nil for a token without policies.
    private let tables: Tables?

    /// A token without policies: its scopes alone decide, as before policies.
    static let unrestricted = TokenAccess()

    private init() { tables = nil }

    /// The policies named `names`, from those the node holds.
    init(names: [String], policies: [String: AccessPolicy]) {
        guard !names.isEmpty else {
            tables = nil
            return
        }
        var enforced = Rules()
        var tried = Rules()
        var hasDryRun = false
        var missing: String?
        for name in names {
            guard let policy = policies[name] else {
                missing = missing ?? name
                continue
            }
            hasDryRun = hasDryRun || policy.dryRun
            for rule in policy.rules {
                if !policy.dryRun { enforced.add(rule, of: policy.id) }
                tried.add(rule, of: policy.id)
            }
        }
        tables = Tables(enforced: enforced, tried: tried, hasDryRun: hasDryRun, missing: missing)
    }

    /// Whether any policy narrows this token.
    var isRestricted: Bool { tables != nil }

    func decide(_ operation: PolicyOperation, _ value: AccessResource, _ context: AccessContext) -> Decision {
        guard let tables else { return .unrestricted }
        if let missing = tables.missing { return Decision(outcome: .deny, policy: missing) }
        let index = PolicyOperation.allCases.firstIndex(of: operation)!
        // Only dry-run policies: they decide nothing.
        var decision = tables.enforced.isEmpty ? .unrestricted : Self.decide(tables.enforced, index, value, context)
        if tables.hasDryRun {
            let would = Self.decide(tables.tried, index, value, context)
            if Self.isStricter(would.outcome, than: decision.outcome) {
                decision.wouldHave = DryRun(outcome: would.outcome, policy: would.policy, rule: would.rule)
            }
        }
        return decision
    }

    /// Whether `a` lets through less than `b`.
    static func isStricter(_ a: Decision.Outcome, than b: Decision.Outcome) -> Bool {
        switch (a, b) {
        case (.deny, .deny): false
        case (.deny, .allow): true
        case (.allow, .deny): false
        case let (.allow(x), .allow(y)): x != y && x.isAtLeastAsStrict(as: y)
        }
    }

    private static func decide(_ rules: Rules, _ index: Int, _ value: AccessResource, _ context: AccessContext)
        -> Decision
    {
        // A deny overrides: the first that matches (by policy and rule id, whatever the order).
        var deny: Compiled?
        for rule in rules.denies[index] where applies(rule, value, context) {
            if deny == nil || (rule.policy, rule.rule.id) < (deny!.policy, deny!.rule.id) { deny = rule }
        }
        if let deny { return Decision(outcome: .deny, policy: deny.policy, rule: deny.rule.id) }
        // Of the allows that match, the most restrictive transform; equal ones by id.
        var best: Compiled?
        for rule in rules.allows[index] where applies(rule, value, context) {
            guard let current = best else {
                best = rule
                continue
            }
            let (a, b) = (rule.transform!, current.transform!)
            if a != b ? a.isAtLeastAsStrict(as: b) : (rule.policy, rule.rule.id) < (current.policy, current.rule.id) {
                best = rule
            }
        }
        guard let best else { return Decision(outcome: .deny) }
        var decision = Decision(outcome: .allow(best.transform!), policy: best.policy, rule: best.rule.id)
        for case let .quota(perHour) in best.rule.conditions {
            decision.quota = QuotaCharge(policy: best.policy, rule: best.rule.id, perHour: perHour)
        }
        return decision
    }

    private static func applies(_ rule: Compiled, _ value: AccessResource, _ context: AccessContext) -> Bool {
        rule.rule.resources.covers(value) && rule.rule.conditions.allSatisfy { holds($0, context) }
    }

    /// Whether a condition holds for the request (a quota is counted by the door, after).
    static func holds(_ condition: PolicyCondition, _ context: AccessContext) -> Bool {
        switch condition {
        case let .clientIn(networks):
            guard let client = context.client else { return false }
            return networks.contains { $0.contains(client) }
        case let .window(days, from, until, zone):
            guard let now = context.localTime(zone) else { return false }
            if from <= until { return days.contains(now.weekday) && from <= now.minute && now.minute < until }
            // Across midnight: the part after it belongs to the day the window began.
            if now.minute >= from { return days.contains(now.weekday) }
            return now.minute < until && days.contains(now.weekday == 1 ? 7 : now.weekday - 1)
        case let .reason(pattern):
            guard let reason = context.reason, PolicyCondition.reasonBytes.contains(reason.utf8.count) else {
                return false
            }
            return pattern?.wholeMatch(reason) ?? true
        case .quota:
            return true
        case let .session(session):
            return context.session == session
        }
    }
}
