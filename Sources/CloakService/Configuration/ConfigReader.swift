import Foundation

/// Walks a ``ConfigNode`` collecting every problem with its path instead of stopping at the first.
final class ConfigReader {
    private(set) var issues: [ConfigIssue] = []
    /// The process's environment, for what the configuration names by variable (route step keys
    /// `env:NAME`, PINs).
    var environment: [String: String] = [:]

    func issue(_ path: String, _ message: String, _ node: ConfigNode? = nil) {
        issues.append(ConfigIssue(path: path, message: message, line: node?.line))
    }

    /// The members of a mapping, reporting unknown keys and duplicates. Nil (with an issue) for a non-mapping.
    func mapping(_ node: ConfigNode?, at path: String, allowed: Set<String>) -> [String: ConfigNode]? {
        guard let node else { return nil }
        guard case let .mapping(members, _) = node else {
            if case let .scalar(text, _) = node, text.isEmpty || text == "~" || text == "null" { return [:] }
            issue(path, "expected a mapping", node)
            return nil
        }
        var out: [String: ConfigNode] = [:]
        for (key, value) in members {
            let p = Self.join(path, key)
            if !allowed.contains(key) {
                issue(p, "unknown key (expected one of: \(allowed.sorted().joined(separator: ", ")))", value)
            } else if out[key] != nil {
                issue(p, "duplicate key", value)
            } else {
                out[key] = value
            }
        }
        return out
    }

    /// A mapping whose keys are names (forms): every key allowed, order kept.
    func namedMapping(_ node: ConfigNode?, at path: String) -> [(key: String, value: ConfigNode)] {
        guard let node else { return [] }
        guard case let .mapping(members, _) = node else {
            issue(path, "expected a mapping", node)
            return []
        }
        return members
    }

    func sequence(_ node: ConfigNode?, at path: String) -> [ConfigNode]? {
        guard let node else { return nil }
        guard case let .sequence(items, _) = node else {
            issue(path, "expected a list", node)
            return nil
        }
        return items
    }

    func string(_ node: ConfigNode?, at path: String) -> String? {
        guard let node else { return nil }
        guard case let .scalar(text, _) = node else {
            issue(path, "expected a string", node)
            return nil
        }
        return text
    }

    func int(_ node: ConfigNode?, at path: String, min: Int = Int.min, max: Int = Int.max) -> Int? {
        guard let text = string(node, at: path) else { return nil }
        guard let v = Int(text.replacingOccurrences(of: "_", with: "")) else {
            issue(path, "expected an integer", node)
            return nil
        }
        guard v >= min && v <= max else {
            issue(path, "must be between \(min) and \(max)", node)
            return nil
        }
        return v
    }

    /// A finite number in `min...max` (`inf`, `nan` and `1e300` are refused, never clamped).
    func double(_ node: ConfigNode?, at path: String, min: Double = 0, max: Double) -> Double? {
        guard let text = string(node, at: path) else { return nil }
        guard let v = Double(text), v.isFinite, v >= min, v <= max else {
            issue(path, "expected a number from \(Self.plain(min)) to \(Self.plain(max))", node)
            return nil
        }
        return v
    }

    private static func plain(_ v: Double) -> String { v == v.rounded() ? String(Int(v)) : String(v) }

    func bool(_ node: ConfigNode?, at path: String) -> Bool? {
        guard let text = string(node, at: path) else { return nil }
        switch text.lowercased() {
        case "true", "yes", "on": return true
        case "false", "no", "off": return false
        default:
            issue(path, "expected true or false", node)
            return nil
        }
    }

    /// Reads an integer at `path` into `config[keyPath: field]` when it is there and valid (an
    /// invalid one is an issue and leaves the default).
    func int<Root, Value>(
        _ node: ConfigNode?, at path: String, min: Int = Int.min, max: Int = Int.max,
        into config: inout Root, _ field: WritableKeyPath<Root, Value>
    ) where Value: ExpressibleByIntegerLiteral {
        if let v = int(node, at: path, min: min, max: max) { config[keyPath: field] = Self.cast(v) }
    }

    /// Reads a number at `path` into `config[keyPath: field]` (see ``int(_:at:min:max:into:_:)``).
    func double<Root>(
        _ node: ConfigNode?, at path: String, min: Double = 0, max: Double, into config: inout Root,
        _ field: WritableKeyPath<Root, Double>
    ) {
        if let v = double(node, at: path, min: min, max: max) { config[keyPath: field] = v }
    }

    /// Reads a boolean at `path` into `config[keyPath: field]`.
    func bool<Root>(_ node: ConfigNode?, at path: String, into config: inout Root, _ field: WritableKeyPath<Root, Bool>)
    {
        if let v = bool(node, at: path) { config[keyPath: field] = v }
    }

    /// `Int` or `Int?` from an integer read.
    private static func cast<Value: ExpressibleByIntegerLiteral>(_ v: Int) -> Value {
        if let same = v as? Value { return same }
        if let optional = Optional(v) as? Value { return optional }
        preconditionFailure("an integer field is Int or Int?")
    }

    func strings(_ node: ConfigNode?, at path: String) -> [String]? {
        guard let items = sequence(node, at: path) else { return nil }
        return items.enumerated().compactMap { string($1, at: "\(path)[\($0)]") }
    }

    func ints(_ node: ConfigNode?, at path: String, min: Int = 0, max: Int = Int.max) -> [Int]? {
        guard let items = sequence(node, at: path) else { return nil }
        let values = items.enumerated().compactMap { int($1, at: "\(path)[\($0)]", min: min, max: max) }
        if values.isEmpty { issue(path, "must list at least one number", node) }
        return values
    }

    static func join(_ path: String, _ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }
}
