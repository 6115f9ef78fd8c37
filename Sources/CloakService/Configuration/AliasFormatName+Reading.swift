import CloakCore

/// The one way an alias format's name is read: from a request body's `format` member, and from
/// the configuration's `tokenization.format` and route operations' `format`.
extension AliasFormatName {
    /// Every format's name, for messages.
    static var names: String { allCases.map(\.rawValue).joined(separator: ", ") }

    /// A request's `format` member; 1002 naming `at` and the formats otherwise.
    static func member(_ value: JSONValue, at: String) throws(CloakError) -> AliasFormatName {
        guard let name = value.stringValue, let format = AliasFormatName(rawValue: name) else {
            throw .malformed("\(at).format must be one of \(names)")
        }
        return format
    }
}

extension ConfigReader {
    /// A configured format's name; an issue at `path` (naming the formats) when it is none.
    func aliasFormat(_ node: ConfigNode?, at path: String) -> AliasFormatName? {
        guard let name = string(node, at: path) else { return nil }
        guard let format = AliasFormatName(rawValue: name) else {
            issue(path, "unknown alias format (expected one of: \(AliasFormatName.names))", node)
            return nil
        }
        return format
    }
}
