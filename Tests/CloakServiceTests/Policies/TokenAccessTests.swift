import CloakCore
import CloakHTTP
import Testing

@testable import CloakService

/// The policy engine (issue 77) by tables: the worked example's three tokens, default deny,
/// deny over allow, the strictest allow, conditions, dry runs; and by properties: a deny added
/// never widens access, and the order of rules changes no outcome.
struct TokenAccessTests {
    static let card = AccessResource(
        classifiers: ["card"], format: "FPE_T_FOUR", form: "checkout", field: "card_number")
    static let ssn = AccessResource(classifiers: ["ssn"], format: "UUID", form: "kyc", field: "ssn")
    static let cardToPSP = AccessResource(
        classifiers: ["card"], format: "FPE_T_FOUR", form: "checkout", field: "card_number", route: "psp")
    static let cardToOther = AccessResource(
        classifiers: ["card"], format: "FPE_T_FOUR", form: "checkout", field: "card_number", route: "crm")

    static let support = AccessPolicy(
        id: "support",
        rules: [
            PolicyRule(
                id: "cards-bin-last4", effect: .allow(.mask(.binLast4)), operations: [.reveal, .lookup],
                resources: PolicyResources(classifiers: ["card"])),
            PolicyRule(
                id: "ssn-last4", effect: .allow(.mask(.pattern("***-**-####"))), operations: [.reveal],
                resources: PolicyResources(classifiers: ["ssn"])),
        ])
    static let payments = AccessPolicy(
        id: "payments",
        rules: [
            PolicyRule(
                id: "cards-to-psp", effect: .allow(.plain), operations: [.route],
                resources: PolicyResources(classifiers: ["card"], routes: ["psp"]))
        ])
    static let fraud = AccessPolicy(
        id: "fraud",
        rules: [
            PolicyRule(
                id: "reveal-with-reason", effect: .allow(.plain), operations: [.reveal],
                conditions: [
                    .reason(pattern: nil),
                    .window(days: Set(1...5), from: 8 * 60, until: 18 * 60, zone: "Europe/Berlin"),
                    .quota(perHour: 50),
                ])
        ])
    static let held = ["support": support, "payments": payments, "fraud": fraud]

    static func at(_ weekday: Int, _ hour: Int) -> @Sendable (String) -> (weekday: Int, minute: Int)? {
        { zone in zone == "Europe/Berlin" ? (weekday, hour * 60) : nil }
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var token: [String]
        var operation: PolicyOperation
        var value: AccessResource
        var context = AccessContext()
        var outcome: TokenAccess.Decision.Outcome
        var rule: String?
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(
            name: "a token without policies keeps its scopes", token: [], operation: .reveal, value: card,
            outcome: .allow(.plain)),
        Case(
            name: "support sees a card as BIN and last four", token: ["support"], operation: .reveal, value: card,
            outcome: .allow(.mask(.binLast4)), rule: "cards-bin-last4"),
        Case(
            name: "support sees an SSN masked", token: ["support"], operation: .reveal, value: ssn,
            outcome: .allow(.mask(.pattern("***-**-####"))), rule: "ssn-last4"),
        Case(
            name: "support may not delete: no rule allows it", token: ["support"], operation: .delete, value: card,
            outcome: .deny),
        Case(
            name: "support may not use a card in a route", token: ["support"], operation: .route, value: cardToPSP,
            outcome: .deny),
        Case(
            name: "payments uses cards through psp", token: ["payments"], operation: .route, value: cardToPSP,
            outcome: .allow(.plain), rule: "cards-to-psp"),
        Case(
            name: "payments uses cards through no other route", token: ["payments"], operation: .route,
            value: cardToOther, outcome: .deny),
        Case(
            name: "payments may not reveal", token: ["payments"], operation: .reveal, value: card, outcome: .deny),
        Case(
            name: "fraud reveals with a reason in hours", token: ["fraud"], operation: .reveal, value: card,
            context: AccessContext(reason: "chargeback 2291 review", localTime: at(2, 10)), outcome: .allow(.plain),
            rule: "reveal-with-reason"),
        Case(
            name: "fraud without a reason is denied", token: ["fraud"], operation: .reveal, value: card,
            context: AccessContext(localTime: at(2, 10)), outcome: .deny),
        Case(
            name: "fraud with a reason too short is denied", token: ["fraud"], operation: .reveal, value: card,
            context: AccessContext(reason: "because", localTime: at(2, 10)), outcome: .deny),
        Case(
            name: "fraud after hours is denied", token: ["fraud"], operation: .reveal, value: card,
            context: AccessContext(reason: "chargeback 2291 review", localTime: at(2, 18)), outcome: .deny),
        Case(
            name: "fraud on a Sunday is denied", token: ["fraud"], operation: .reveal, value: card,
            context: AccessContext(reason: "chargeback 2291 review", localTime: at(7, 10)), outcome: .deny),
        Case(
            name: "support and fraud together: the strictest allow wins", token: ["support", "fraud"],
            operation: .reveal, value: card,
            context: AccessContext(reason: "chargeback 2291 review", localTime: at(2, 10)),
            outcome: .allow(.mask(.binLast4)), rule: "cards-bin-last4"),
        Case(
            name: "a policy the node does not hold denies everything", token: ["support", "gone"], operation: .reveal,
            value: card, outcome: .deny),
    ]

    @Test(arguments: cases)
    func decides(_ test: Case) {
        let access = TokenAccess(names: test.token, policies: Self.held)
        let decision = access.decide(test.operation, test.value, test.context)
        #expect(decision.outcome == test.outcome)
        if let rule = test.rule { #expect(decision.rule == rule) }
    }

    @Test func aQuotaRuleAsksTheDoorToCountTheOperation() {
        let access = TokenAccess(names: ["fraud"], policies: Self.held)
        let decision = access.decide(
            .reveal, Self.card, AccessContext(reason: "chargeback 2291 review", localTime: Self.at(3, 9)))
        #expect(decision.quota == TokenAccess.QuotaCharge(policy: "fraud", rule: "reveal-with-reason", perHour: 50))
    }

    @Test func aDenyOverridesEveryAllow() {
        var support = Self.support
        support.rules.append(
            PolicyRule(
                id: "no-amex", effect: .deny, operations: [.reveal],
                resources: PolicyResources(metadata: ["brand": "amex"])))
        let access = TokenAccess(
            names: ["support", "payments"], policies: ["support": support, "payments": Self.payments])
        var amex = Self.card
        amex.metadata = ["brand": "amex"]
        #expect(access.decide(.reveal, amex, AccessContext()).outcome == .deny)
        #expect(access.decide(.reveal, amex, AccessContext()).rule == "no-amex")
        #expect(access.decide(.reveal, Self.card, AccessContext()).outcome == .allow(.mask(.binLast4)))
    }

    @Test func aDryRunDecidesNothingAndSaysWhatItWouldHave() {
        var strict = AccessPolicy(
            id: "strict",
            rules: [PolicyRule(id: "redact-all", effect: .allow(.redact), operations: [.reveal])], dryRun: true)
        let alone = TokenAccess(names: ["strict"], policies: ["strict": strict])
        let decision = alone.decide(.reveal, Self.card, AccessContext())
        #expect(decision.outcome == .allow(.plain))
        #expect(
            decision.wouldHave == TokenAccess.DryRun(outcome: .allow(.redact), policy: "strict", rule: "redact-all"))
        strict.dryRun = false
        #expect(
            TokenAccess(names: ["strict"], policies: ["strict": strict]).decide(.reveal, Self.card, AccessContext())
                .outcome == .allow(.redact))
        let beside = TokenAccess(
            names: ["support", "strict"],
            policies: [
                "support": Self.support, "strict": AccessPolicy(id: "strict", rules: strict.rules, dryRun: true),
            ])
        let masked = beside.decide(.reveal, Self.card, AccessContext())
        #expect(masked.outcome == .allow(.mask(.binLast4)))
        #expect(masked.wouldHave?.outcome == .allow(.redact))
    }

    @Test func theClientNetworkAndSessionConditions() throws {
        let office = try #require(IPNetwork("10.8.0.0/16"))
        let policy = AccessPolicy(
            id: "office",
            rules: [
                PolicyRule(
                    id: "from-office", effect: .allow(.plain), operations: [.reveal],
                    conditions: [.clientIn([office]), .session(false)])
            ])
        let access = TokenAccess(names: ["office"], policies: ["office": policy])
        #expect(
            access.decide(.reveal, Self.card, AccessContext(client: IPAddress("10.8.1.2"))).outcome == .allow(.plain))
        #expect(access.decide(.reveal, Self.card, AccessContext(client: IPAddress("10.9.1.2"))).outcome == .deny)
        #expect(access.decide(.reveal, Self.card, AccessContext()).outcome == .deny)
        #expect(
            access.decide(.reveal, Self.card, AccessContext(client: IPAddress("10.8.1.2"), session: true)).outcome
                == .deny)
    }

    @Test(arguments: [
        // A Friday 22:00-06:00 window: the part after midnight is Friday's, on Saturday.
        (5, 23 * 60, true), (6, 60, true), (6, 6 * 60, false), (5, 60, false), (4, 23 * 60, false),
        (6, 23 * 60, false), (1, 60, false),
    ])
    func aWindowAcrossMidnightBelongsToTheDayItBegan(weekday: Int, minute: Int, holds: Bool) {
        let condition = PolicyCondition.window(days: [5], from: 22 * 60, until: 6 * 60, zone: "UTC")
        let context = AccessContext(localTime: { _ in (weekday, minute) })
        #expect(TokenAccess.holds(condition, context) == holds)
    }

    // MARK: properties

    /// A generator for shuffles the test can repeat.
    struct Seeded: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return state
        }
    }

    struct Random {
        var state: UInt64
        mutating func next(_ bound: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(bound))
        }
    }

    static let transforms: [ValueTransform] = [
        .plain, .mask(.last4), .mask(.binLast4), .mask(.pattern("***-**-####")), .redact,
    ]
    static let values: [AccessResource] = [
        card, ssn, cardToPSP, cardToOther,
        AccessResource(classifiers: ["email"], format: "UUID", metadata: ["team": "a"]),
    ]

    static func rule(_ random: inout Random, _ id: Int) -> PolicyRule {
        let operations = Set((0..<(1 + random.next(3))).map { _ in PolicyOperation.allCases[random.next(3)] })
        var resources = PolicyResources()
        switch random.next(4) {
        case 0: resources.classifiers = [["card", "ssn", "email"][random.next(3)]]
        case 1: resources.routes = ["psp"]
        case 2: resources.metadata = ["team": "a"]
        default: break
        }
        let effect: PolicyEffect = random.next(4) == 0 ? .deny : .allow(transforms[random.next(transforms.count)])
        return PolicyRule(id: "r\(id)", effect: effect, operations: operations, resources: resources)
    }

    @Test(arguments: 0..<200)
    func aDenyAddedNeverWidensAndOrderChangesNothing(seed: Int) {
        var random = Random(state: UInt64(seed) &+ 1)
        var rules = (0..<(1 + random.next(6))).map { Self.rule(&random, $0) }
        let policy = AccessPolicy(id: "p", rules: rules)
        let before = TokenAccess(names: ["p"], policies: ["p": policy])
        var deny = Self.rule(&random, 99)
        deny.effect = .deny
        let after = TokenAccess(names: ["p"], policies: ["p": AccessPolicy(id: "p", rules: rules + [deny])])
        var generator = Seeded(state: UInt64(seed) &* 2_654_435_761 &+ 7)
        rules.shuffle(using: &generator)
        let shuffled = TokenAccess(names: ["p"], policies: ["p": AccessPolicy(id: "p", rules: rules)])
        for operation in PolicyOperation.allCases {
            for value in Self.values {
                let was = before.decide(operation, value, AccessContext())
                let now = after.decide(operation, value, AccessContext())
                #expect(!TokenAccess.isStricter(was.outcome, than: now.outcome), "a deny widened \(operation)")
                let reordered = shuffled.decide(operation, value, AccessContext())
                #expect(reordered == was, "order changed \(operation)")
            }
        }
    }
}
