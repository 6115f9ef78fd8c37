extension JSONReader {
    mutating func object(depth: Int) throws(JSONParseError) -> JSONValue {
        guard depth <= maxDepth else { throw fail(.tooDeep) }
        index += 1
        var members: [(key: String, value: JSONValue)] = []
        var seen: Set<String>? = nil
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return .object(members)
        }
        members.reserveCapacity(8)  // one allocation for the usual small object
        while true {
            skipWhitespace()
            guard index < bytes.count else { throw fail(.unexpectedEnd) }
            guard bytes[index] == UInt8(ascii: "\"") else { throw fail(.unexpectedCharacter) }
            let keyOffset = index
            let key = try string()
            // A duplicate member is refused at any depth: parsers upstream disagree on which one
            // wins (last-wins would read an attacker's value in place of an alias).
            if Self.hasMember(key, in: members, seen: &seen) {
                throw JSONParseError(reason: .duplicateKey, offset: keyOffset)
            }
            skipWhitespace()
            guard index < bytes.count else { throw fail(.unexpectedEnd) }
            guard bytes[index] == UInt8(ascii: ":") else { throw fail(.unexpectedCharacter) }
            index += 1
            skipWhitespace()
            members.append((key, try value(depth: depth)))
            skipWhitespace()
            guard index < bytes.count else { throw fail(.unexpectedEnd) }
            switch bytes[index] {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "}"): index += 1; return .object(members)
            default: throw fail(.unexpectedCharacter)
            }
        }
    }

    /// Whether `key` is already a member: a linear scan for small objects (the common case, no
    /// allocation), a set once an object grows past 16 members (so a huge object stays linear).
    static func hasMember(_ key: String, in members: [(key: String, value: JSONValue)], seen: inout Set<String>?)
        -> Bool
    {
        if seen == nil {
            if members.count < 16 { return members.contains { $0.key == key } }
            seen = Set(members.map(\.key))
        }
        return !seen!.insert(key).inserted
    }

    mutating func array(depth: Int) throws(JSONParseError) -> JSONValue {
        guard depth <= maxDepth else { throw fail(.tooDeep) }
        index += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try value(depth: depth))
            skipWhitespace()
            guard index < bytes.count else { throw fail(.unexpectedEnd) }
            switch bytes[index] {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "]"): index += 1; return .array(elements)
            default: throw fail(.unexpectedCharacter)
            }
        }
    }
}
