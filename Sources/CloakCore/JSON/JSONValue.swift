/// A JSON document as Cloak reads and writes it.
///
/// Objects keep their members in document order, so answers are deterministic and a form's
/// fields come back in the order they were configured. Numbers keep their source text: Cloak
/// never does arithmetic on client numbers, and re-printing them must not change them.
public enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    /// The number exactly as written in the source (already checked against JSON's grammar).
    case number(String)
    case string(String)
    case array([JSONValue])
    case object([(key: String, value: JSONValue)])

    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case let (.bool(a), .bool(b)): return a == b
        case let (.number(a), .number(b)): return a == b
        case let (.string(a), .string(b)): return a == b
        case let (.array(a), .array(b)): return a == b
        case let (.object(a), .object(b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        default: return false
        }
    }

    /// The member named `key` of an object (the first one, should a document repeat a key).
    public subscript(key: String) -> JSONValue? {
        guard case let .object(members) = self else { return nil }
        return members.first { $0.key == key }?.value
    }

    public var stringValue: String? {
        if case let .string(s) = self { return s }
        return nil
    }

    /// The integer a number spells (nil for any other value, a fraction or one past Int64).
    public var int64Value: Int64? {
        if case let .number(text) = self { return Int64(text) }
        return nil
    }

    public var objectMembers: [(key: String, value: JSONValue)]? {
        if case let .object(m) = self { return m }
        return nil
    }

    /// A JSON integer literal.
    public static func int(_ value: Int) -> JSONValue { .number(String(value)) }

    /// An array of strings.
    public static func strings(_ values: [String]) -> JSONValue { .array(values.map { .string($0) }) }

    /// The name of the value's JSON type, for error messages that must not quote the value.
    public var typeName: String {
        switch self {
        case .null: return "null"
        case .bool: return "boolean"
        case .number: return "number"
        case .string: return "string"
        case .array: return "array"
        case .object: return "object"
        }
    }
}
