internal import Yams

/// A configuration document as a plain tree, so that environment overrides and the reader do not
/// depend on the YAML library's types. Scalars keep their text; the reader decides their type.
indirect enum ConfigNode: Sendable {
    case scalar(String, line: Int?)
    case mapping([(key: String, value: ConfigNode)], line: Int?)
    case sequence([ConfigNode], line: Int?)

    var line: Int? {
        switch self {
        case let .scalar(_, line), let .mapping(_, line), let .sequence(_, line): return line
        }
    }

    /// Parses YAML text. An empty document is an empty mapping.
    static func parse(yaml: String) throws -> ConfigNode {
        guard let node = try Yams.compose(yaml: yaml) else { return .mapping([], line: nil) }
        return try convert(node)
    }

    private static func convert(_ node: Node) throws -> ConfigNode {
        let line = node.mark.map { $0.line }
        switch node {
        case let .scalar(s):
            return .scalar(s.string, line: line)
        case let .mapping(m):
            return .mapping(try m.map { (key: $0.key.string ?? "", value: try convert($0.value)) }, line: line)
        case let .sequence(s):
            return .sequence(try s.map(convert), line: line)
        case .alias:
            throw ConfigurationError(issues: [ConfigIssue(path: "", message: "YAML aliases are not supported")])
        }
    }

    /// Returns the tree with `value` set at `path` (mappings are created as needed).
    func setting(_ path: [String], to value: String) -> ConfigNode {
        guard let first = path.first else { return .scalar(value, line: nil) }
        var members: [(key: String, value: ConfigNode)] = []
        var line: Int?
        if case let .mapping(m, l) = self {
            members = m
            line = l
        }
        if let i = members.firstIndex(where: { $0.key == first }) {
            members[i].value = members[i].value.setting(Array(path.dropFirst()), to: value)
        } else {
            members.append((first, ConfigNode.mapping([], line: nil).setting(Array(path.dropFirst()), to: value)))
        }
        return .mapping(members, line: line)
    }
}

/// One problem in a configuration, at its YAML path (e.g. `forms.checkout.fields[2].type`).
package struct ConfigIssue: Sendable, Equatable, CustomStringConvertible {
    package let path: String
    package let message: String
    package var line: Int?

    package init(path: String, message: String, line: Int? = nil) {
        self.path = path
        self.message = message
        self.line = line
    }

    package var description: String {
        let at = line.map { " (line \($0))" } ?? ""
        return "\(path.isEmpty ? "<root>" : path)\(at): \(message)"
    }

    package static func == (a: ConfigIssue, b: ConfigIssue) -> Bool { a.path == b.path && a.message == b.message }
}

/// Every problem found in a configuration; the server does not start while there is one.
package struct ConfigurationError: Error, Sendable, CustomStringConvertible {
    package let issues: [ConfigIssue]
    package var description: String { issues.map(\.description).joined(separator: "\n") }
}
