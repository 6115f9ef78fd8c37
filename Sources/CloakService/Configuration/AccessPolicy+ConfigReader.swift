import CloakCore
import CloakHTTP
import Foundation

extension ServiceConfiguration {
    /// `policies[]` (issue 77): `id`, `rules[]` of `id`, `effect` (`allow`, `deny`), `transform`
    /// (an allow's: `plain`, `redact`, `last4`, `bin_last4` or a pattern such as `***-**-####`),
    /// `operations`, the resources (`classifiers`, `formats`, `fields`, `routes`, `metadata`,
    /// `files`) and `when` (`client_in`, `reason`, `window`, `session`).
    ///
    /// Refused until the store counts them (a node's own count would let several nodes or a
    /// restart multiply them): `when.quota_per_hour`; and `dry_run`, until its decisions are
    /// audited per minute and rule.
    static func readPolicies(_ node: ConfigNode?, into config: inout ServiceConfiguration, _ r: ConfigReader) {
        guard let items = r.sequence(node, at: "policies") else { return }
        for (i, item) in items.enumerated() {
            let p = "policies[\(i)]"
            guard let m = r.mapping(item, at: p, allowed: ["id", "rules", "dry_run"]) else { continue }
            guard let id = r.string(m["id"], at: "\(p).id") else {
                r.issue("\(p).id", "is required", item)
                continue
            }
            if !Self.isPolicyName(id) { r.issue("\(p).id", "expected 1 to 64 of a-z 0-9 _ -", m["id"]) }
            if config.policies[id] != nil { r.issue("\(p).id", "duplicate policy id", m["id"]) }
            if let dryRun = m["dry_run"].flatMap({ r.bool($0, at: "\(p).dry_run") }), dryRun {
                r.issue("\(p).dry_run", "is not supported yet: a policy decides, or is left out", m["dry_run"])
            }
            var rules: [PolicyRule] = []
            var ruleIDs = Set<String>()
            for (j, ruleNode) in (r.sequence(m["rules"], at: "\(p).rules") ?? []).enumerated() {
                guard let rule = readRule(ruleNode, at: "\(p).rules[\(j)]", r) else { continue }
                if !ruleIDs.insert(rule.id).inserted { r.issue("\(p).rules[\(j)].id", "duplicate rule id", ruleNode) }
                rules.append(rule)
            }
            if rules.isEmpty { r.issue("\(p).rules", "give at least one rule", item) }
            config.policies[id] = AccessPolicy(id: id, rules: rules)
        }
    }

    /// Each token's `policies` compiled against `policies[]` (``TokenAccess``), once a load: a
    /// name the file does not hold is refused here (at run time it would deny everything).
    static func compilePolicies(into config: inout ServiceConfiguration, _ r: ConfigReader) {
        for (i, token) in config.auth.enumerated() where !token.policies.isEmpty {
            for (j, name) in token.policies.enumerated() where config.policies[name] == nil {
                r.issue("auth.tokens[\(i)].policies[\(j)]", "no policy \(name) in policies[]")
            }
            config.auth[i].access = TokenAccess(names: token.policies, policies: config.policies)
        }
    }

    /// A policy's or a rule's id: logged and audited as it is.
    static func isPolicyName(_ text: String) -> Bool {
        (1...64).contains(text.utf8.count)
            && text.utf8.allSatisfy {
                (0x61...0x7a).contains($0) || (0x30...0x39).contains($0) || $0 == 0x5f || $0 == 0x2d
            }
    }

    private static func readRule(_ node: ConfigNode, at p: String, _ r: ConfigReader) -> PolicyRule? {
        guard
            let m = r.mapping(
                node, at: p,
                allowed: [
                    "id", "effect", "transform", "operations", "classifiers", "formats", "fields", "routes",
                    "metadata", "files", "when",
                ])
        else { return nil }
        let id = r.string(m["id"], at: "\(p).id")
        if id == nil { r.issue("\(p).id", "is required", node) }
        if let id, !isPolicyName(id) { r.issue("\(p).id", "expected 1 to 64 of a-z 0-9 _ -", m["id"]) }
        var effect: PolicyEffect?
        switch r.string(m["effect"], at: "\(p).effect") {
        case "allow"?:
            let name = r.string(m["transform"], at: "\(p).transform") ?? "plain"
            switch name {
            case "plain": effect = .allow(.plain)
            case "redact": effect = .allow(.redact)
            default:
                guard let mask = ValueMask(name: name) else {
                    r.issue(
                        "\(p).transform",
                        "expected plain, redact, last4, bin_last4 or a pattern of # (shown), * (hidden) and - / . or "
                            + "space (such as ***-**-####)", m["transform"])
                    break
                }
                effect = .allow(.mask(mask))
            }
        case "deny"?:
            if m["transform"] != nil { r.issue("\(p).transform", "a deny shows nothing: leave it out", m["transform"]) }
            effect = .deny
        case nil: r.issue("\(p).effect", "is required (allow or deny)", node)
        default: r.issue("\(p).effect", "expected allow or deny", m["effect"])
        }
        var operations = Set<PolicyOperation>()
        for (k, text) in (r.strings(m["operations"], at: "\(p).operations") ?? []).enumerated() {
            guard let operation = PolicyOperation(rawValue: text) else {
                let known = PolicyOperation.allCases.map(\.rawValue).joined(separator: ", ")
                r.issue("\(p).operations[\(k)]", "unknown operation (expected one of: \(known))")
                continue
            }
            operations.insert(operation)
        }
        if operations.isEmpty { r.issue("\(p).operations", "give at least one operation", node) }
        var resources = PolicyResources()
        // A list given empty would match nothing: a deny that never fires. Refused.
        func nonEmpty(_ key: String, _ list: [String]?) -> [String]? {
            if let list, list.isEmpty { r.issue("\(p).\(key)", "give at least one, or leave the key out", m[key]) }
            return list
        }
        resources.classifiers = nonEmpty("classifiers", r.strings(m["classifiers"], at: "\(p).classifiers")).map(
            Set.init)
        if let formats = r.sequence(m["formats"], at: "\(p).formats") {
            if formats.isEmpty { r.issue("\(p).formats", "give at least one, or leave the key out", m["formats"]) }
            resources.formats = Set(
                formats.enumerated().compactMap { r.aliasFormat($1, at: "\(p).formats[\($0)]")?.rawValue })
        }
        if let fields = nonEmpty("fields", r.strings(m["fields"], at: "\(p).fields")) {
            // No door that judges policies knows a value's field yet (a record keeps its form,
            // `form:<name>`): `form.field` would match nothing, and a deny of it never fire.
            for (k, field) in fields.enumerated() where !field.hasSuffix(".*") || field.count < 3 {
                r.issue(
                    "\(p).fields[\(k)]",
                    "expected form.* (every value stored through a form): a single field is not told apart yet")
            }
            resources.fields = Set(fields)
        }
        resources.routes = nonEmpty("routes", r.strings(m["routes"], at: "\(p).routes")).map(Set.init)
        for (key, value) in r.namedMapping(m["metadata"], at: "\(p).metadata") {
            if let text = r.string(value, at: "\(p).metadata.\(key)") { resources.metadata[key] = text }
        }
        resources.files = m["files"].flatMap { r.bool($0, at: "\(p).files") }
        let conditions = readConditions(m["when"], at: "\(p).when", r)
        guard let id, let effect, !operations.isEmpty else { return nil }
        return PolicyRule(id: id, effect: effect, operations: operations, resources: resources, conditions: conditions)
    }

    private static func readConditions(_ node: ConfigNode?, at p: String, _ r: ConfigReader) -> [PolicyCondition] {
        guard
            let m = r.mapping(
                node, at: p, allowed: ["client_in", "reason", "window", "session", "quota_per_hour"])
        else { return [] }
        var conditions: [PolicyCondition] = []
        if let cidrs = r.strings(m["client_in"], at: "\(p).client_in") {
            var networks: [IPNetwork] = []
            for (k, text) in cidrs.enumerated() {
                guard let network = IPNetwork(text) else {
                    r.issue("\(p).client_in[\(k)]", "expected an address or a network (10.0.0.0/8, 2001:db8::/32)")
                    continue
                }
                networks.append(network)
            }
            if networks.isEmpty { r.issue("\(p).client_in", "give at least one network", m["client_in"]) }
            conditions.append(.clientIn(networks))
        }
        if let reason = m["reason"] {
            // `true`: any reason of 8 to 200 characters; a string: a pattern it must match whole.
            // A YAML boolean is read as one (`yes`, `on`, …), never as a pattern; `false` asks for
            // nothing and is refused, as a condition that says nothing would be.
            if case let .scalar(text, _) = reason, Self.yamlBooleans.contains(text.lowercased()) {
                if r.bool(reason, at: "\(p).reason") == true {
                    conditions.append(.reason(pattern: nil))
                } else {
                    r.issue("\(p).reason", "expected true or a regular expression (leave it out for no reason)", reason)
                }
            } else if let text = r.string(reason, at: "\(p).reason") {
                if let pattern = try? RegexPattern(text) {
                    conditions.append(.reason(pattern: pattern))
                } else {
                    r.issue("\(p).reason", "expected true or a regular expression", reason)
                }
            }
        }
        if let window = r.mapping(m["window"], at: "\(p).window", allowed: ["days", "from", "until", "zone"]) {
            let named = r.strings(window["days"], at: "\(p).window.days")
            if named?.isEmpty == true {
                r.issue("\(p).window.days", "give at least one day, or leave it out for every day", window["days"])
            }
            let days = (named ?? Self.weekdays).enumerated().compactMap {
                k, day -> Int? in
                guard let index = Self.weekdays.firstIndex(of: day) else {
                    r.issue("\(p).window.days[\(k)]", "expected one of: \(Self.weekdays.joined(separator: ", "))")
                    return nil
                }
                return index + 1
            }
            let from = readMinute(window["from"], at: "\(p).window.from", r)
            let until = readMinute(window["until"], at: "\(p).window.until", r)
            let zone = r.string(window["zone"], at: "\(p).window.zone")
            if zone == nil {
                r.issue("\(p).window.zone", "is required (an IANA zone such as Europe/Berlin)", m["window"])
            }
            if let zone, TimeZone(identifier: zone) == nil {
                r.issue("\(p).window.zone", "unknown time zone (an IANA zone such as Europe/Berlin)", window["zone"])
            }
            if let from, let until, from == until {
                r.issue("\(p).window.until", "must differ from from (an empty window never holds)", window["until"])
            }
            if let from, let until, let zone, !days.isEmpty {
                conditions.append(.window(days: Set(days), from: from, until: until, zone: zone))
            }
        }
        if let session = m["session"].flatMap({ r.bool($0, at: "\(p).session") }) {
            conditions.append(.session(session))
        }
        if m["quota_per_hour"] != nil {
            r.issue(
                "\(p).quota_per_hour",
                "is not supported yet: a quota is counted in the store, which this version does not do",
                m["quota_per_hour"])
        }
        return conditions
    }

    /// The scalars YAML 1.1 reads as booleans, lowercased.
    static let yamlBooleans: Set<String> = ["true", "false", "yes", "no", "on", "off"]

    /// Weekdays as a window names them, Monday first (the engine's 1 … 7).
    static let weekdays = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]

    /// `HH:MM` (00:00 to 24:00) as minutes of the day.
    private static func readMinute(_ node: ConfigNode?, at path: String, _ r: ConfigReader) -> Int? {
        guard let text = r.string(node, at: path) else {
            r.issue(path, "is required (HH:MM)")
            return nil
        }
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].count == 2, parts[1].count == 2, let hour = Int(parts[0]),
            let minute = Int(parts[1]), (0...24).contains(hour), (0...59).contains(minute), hour * 60 + minute <= 1_440
        else {
            r.issue(path, "expected HH:MM, 00:00 to 24:00", node)
            return nil
        }
        return hour * 60 + minute
    }
}
