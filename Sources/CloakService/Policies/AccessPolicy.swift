import CloakCore
import CloakHTTP

/// A policy (issue 77): rules that say which values a token may see or use, whole, masked or
/// not at all, and under which conditions. A token that names policies is denied what no rule
/// of them allows (default deny); a deny overrides any allow; of the allows that match, the most
/// restrictive transform wins. Scopes still gate the endpoints: a policy narrows what an
/// endpoint returns or does, never widens it. Pure values: ``TokenAccess`` compiles a token's
/// policies once, and decides without parsing or allocating per rule.
struct AccessPolicy: Sendable, Equatable {
    var id: String
    var rules: [PolicyRule]
    /// Decides nothing: what it would have changed is audited (`policy_would_deny`,
    /// `policy_would_mask`).
    var dryRun = false
}

/// One rule: what it covers (operations and resources), what it does, and when.
struct PolicyRule: Sendable, Equatable {
    var id: String
    var effect: PolicyEffect
    var operations: Set<PolicyOperation>
    var resources = PolicyResources()
    var conditions: [PolicyCondition] = []
}

/// What a caller does with a stored value.
enum PolicyOperation: String, Sendable, CaseIterable, Hashable {
    case reveal
    case lookup
    case create
    case update
    case delete
    /// Revealed into an egress or inbound route's request.
    case route
    case export
    case fileDownload = "file_download"
    /// An Elements or CloakCollect reveal session.
    case revealSession = "reveal_session"
}

enum PolicyEffect: Sendable, Equatable {
    case allow(ValueTransform)
    case deny
}

/// How an allowed value leaves.
enum ValueTransform: Sendable, Equatable {
    case plain
    case mask(ValueMask)
    /// The fixed marker ``ValueMask/redacted``.
    case redact

    /// Characters of a value it lets through at most: the most restrictive of several is the
    /// one with the fewest (ties: the mask named first in ``ValueMask`` order).
    var exposure: Int {
        switch self {
        case .plain: Int.max
        case let .mask(mask): mask.shown
        case .redact: 0
        }
    }

    /// Whether `self` lets through no more than `other`.
    func isAtLeastAsStrict(as other: ValueTransform) -> Bool {
        if exposure != other.exposure { return exposure < other.exposure }
        switch (self, other) {
        case let (.mask(a), .mask(b)):
            // Two patterns that show as many characters: by their text, so that no rule order
            // decides between them.
            if case let .pattern(x) = a, case let .pattern(y) = b { return x <= y }
            return a.order <= b.order
        default: return true
        }
    }
}

/// What a rule covers. Each kind given must match (all of them); within a kind, any one of the
/// values listed does. A kind left out matches everything.
struct PolicyResources: Sendable, Equatable {
    var classifiers: Set<String>?
    /// Alias formats, by name (`FPE_T_FOUR`, `UUID`, …).
    var formats: Set<String>?
    /// `form.field` names (`checkout.card_data.card_number`; `checkout.*`: every field of a form).
    var fields: Set<String>?
    var routes: Set<String>?
    /// Metadata pairs the value's record must all hold.
    var metadata: [String: String] = [:]
    /// Only files (true), only other values (false).
    var files: Bool?

    func covers(_ value: AccessResource) -> Bool {
        if let classifiers, !value.classifiers.contains(where: classifiers.contains) { return false }
        if let formats, !formats.contains(value.format) { return false }
        if let fields {
            // `form.*` needs only the form; `form.field` the field too (a door that knows the
            // value's field: the configuration refuses it until one does).
            guard let form = value.form,
                fields.contains("\(form).*") || value.field.map({ fields.contains("\(form).\($0)") }) == true
            else { return false }
        }
        if let routes {
            guard let route = value.route, routes.contains(route) else { return false }
        }
        for (key, expected) in metadata where value.metadata[key] != expected { return false }
        if let files, files != value.isFile { return false }
        return true
    }
}

/// What the engine knows of a value (never the value itself).
struct AccessResource: Sendable, Equatable {
    var classifiers: [String] = []
    var format: String = ""
    var form: String?
    var field: String?
    var route: String?
    var metadata: [String: String] = [:]
    var isFile = false
}

/// When a rule applies.
enum PolicyCondition: Sendable, Equatable {
    /// The client's address (after trusted proxies) is in one of these networks.
    case clientIn([IPNetwork])
    /// On these weekdays (1 Monday … 7 Sunday), from `from` to before `until` (minutes of the
    /// day), in the IANA zone `zone`.
    case window(days: Set<Int>, from: Int, until: Int, zone: String)
    /// A `Cloak-Access-Reason` header of 8 to 200 characters, matching `pattern` when given.
    case reason(pattern: RegexPattern?)
    /// At most this many operations an hour for the token under this rule, counted in the store.
    case quota(perHour: Int)
    /// Only through a console session (true) or only with the token itself (false).
    case session(Bool)

    static let reasonBytes = 8...200
}

/// A request's circumstances, as the door that asks knows them.
struct AccessContext: Sendable {
    var client: IPAddress?
    /// The local weekday (1 Monday … 7 Sunday) and minute of the day in an IANA zone; nil for a
    /// zone the node does not know (the condition then fails).
    var localTime: @Sendable (_ zone: String) -> (weekday: Int, minute: Int)? = { _ in nil }
    var reason: String?
    var session = false

    init(
        client: IPAddress? = nil, reason: String? = nil, session: Bool = false,
        localTime: @escaping @Sendable (_ zone: String) -> (weekday: Int, minute: Int)? = { _ in nil }
    ) {
        self.client = client
        self.reason = reason
        self.session = session
        self.localTime = localTime
    }
}
