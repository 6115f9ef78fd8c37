/// A JSONPath subset, the one route selectors use: `$.a.b`, `$['a.b']`, `$.a[0]`, `$.a[*]`,
/// `$.*`, `$..name` (recursive descent).
///
/// ```swift
/// let path = try JSONPath("$.payment.card_number")
/// path.locations(in: document)   // [[.key("payment"), .key("card_number")]]
/// ```
public struct JSONPath: Sendable, Equatable, CustomStringConvertible {
    public enum Step: Sendable, Equatable {
        /// `.name` or `['name']`.
        case member(String)
        /// `[n]`.
        case index(Int)
        /// `[*]` or `.*`: every element or member.
        case wildcard
        /// `..name`: the member `name` of this value and of everything below it.
        case descendant(String)
    }

    public let steps: [Step]
    /// The path as configured (what errors name).
    public let description: String

    /// Parses a path.
    /// - Throws: ``SelectorError`` naming what is wrong, for `check-config`.
    public init(_ text: String) throws(SelectorError) {
        description = text
        let bytes = Array(text.utf8)
        guard bytes.first == UInt8(ascii: "$") else { throw SelectorError("a JSON path starts with $: \(text)") }
        var steps: [Step] = []
        var i = 1
        func name(from start: Int) -> (String, Int) {
            var end = start
            while end < bytes.count, bytes[end] != UInt8(ascii: "."), bytes[end] != UInt8(ascii: "[") { end += 1 }
            return (String(decoding: bytes[start..<end], as: UTF8.self), end)
        }
        while i < bytes.count {
            switch bytes[i] {
            case UInt8(ascii: "."):
                if i + 1 < bytes.count, bytes[i + 1] == UInt8(ascii: ".") {
                    let (n, end) = name(from: i + 2)
                    guard !n.isEmpty, n != "*" else { throw SelectorError("`..` takes a member name in \(text)") }
                    steps.append(.descendant(n))
                    i = end
                } else {
                    let (n, end) = name(from: i + 1)
                    guard !n.isEmpty else { throw SelectorError("an empty member name in \(text)") }
                    steps.append(n == "*" ? .wildcard : .member(n))
                    i = end
                }
            case UInt8(ascii: "["):
                guard let close = Self.bracketEnd(bytes, from: i) else {
                    throw SelectorError("an unclosed [ in \(text)")
                }
                steps.append(try Self.bracket(Array(bytes[(i + 1)..<close]), in: text))
                i = close + 1
            default:
                throw SelectorError("expected . or [ at byte \(i) of \(text)")
            }
        }
        guard !steps.isEmpty else { throw SelectorError("a JSON path selects something below $: \(text)") }
        self.steps = steps
    }

    /// Where `]` closes the bracket opened at `start`, skipping quoted text.
    private static func bracketEnd(_ bytes: [UInt8], from start: Int) -> Int? {
        var i = start + 1
        var quote: UInt8?
        while i < bytes.count {
            let b = bytes[i]
            if let q = quote {
                if b == UInt8(ascii: "\\") { i += 2; continue }
                if b == q { quote = nil }
            } else if b == UInt8(ascii: "'") || b == UInt8(ascii: "\"") {
                quote = b
            } else if b == UInt8(ascii: "]") {
                return i
            }
            i += 1
        }
        return nil
    }

    private static func bracket(_ inner: [UInt8], in text: String) throws(SelectorError) -> Step {
        if inner == [UInt8(ascii: "*")] { return .wildcard }
        if let q = inner.first, q == UInt8(ascii: "'") || q == UInt8(ascii: "\""), inner.count >= 2, inner.last == q {
            var out: [UInt8] = []
            var i = 1
            while i < inner.count - 1 {
                if inner[i] == UInt8(ascii: "\\"), i + 1 < inner.count - 1 { i += 1 }
                out.append(inner[i])
                i += 1
            }
            return .member(String(decoding: out, as: UTF8.self))
        }
        guard !inner.isEmpty, inner.count <= 9, inner.allSatisfy({ $0 >= 48 && $0 <= 57 }),
            let n = Int(String(decoding: inner, as: UTF8.self))
        else { throw SelectorError("expected [n], [*] or ['name'] in \(text)") }
        return .index(n)
    }

    /// Every place the path selects in `value`, in document order; each place as the keys and
    /// indices that lead to it.
    public func locations(in value: JSONValue) -> [[JSONLocation]] {
        var out: [[JSONLocation]] = []
        Self.walk(value, steps[...], [], &out)
        return out
    }

    private static func walk(
        _ value: JSONValue, _ steps: ArraySlice<Step>, _ at: [JSONLocation], _ out: inout [[JSONLocation]]
    ) {
        guard let step = steps.first else {
            out.append(at)
            return
        }
        let rest = steps.dropFirst()
        switch (step, value) {
        case let (.member(name), .object(members)):
            for (i, m) in members.enumerated() where m.key == name { walk(m.value, rest, at + [.member(i)], &out) }
        case let (.index(n), .array(elements)) where n < elements.count:
            walk(elements[n], rest, at + [.element(n)], &out)
        case let (.wildcard, .object(members)):
            for (i, m) in members.enumerated() { walk(m.value, rest, at + [.member(i)], &out) }
        case let (.wildcard, .array(elements)):
            for (i, e) in elements.enumerated() { walk(e, rest, at + [.element(i)], &out) }
        case let (.descendant(name), .object(members)):
            for (i, m) in members.enumerated() {
                if m.key == name { walk(m.value, rest, at + [.member(i)], &out) }
                walk(m.value, steps, at + [.member(i)], &out)
            }
        case let (.descendant, .array(elements)):
            for (i, e) in elements.enumerated() { walk(e, steps, at + [.element(i)], &out) }
        default:
            return
        }
    }
}

/// One step to a value inside a document: the i-th member of an object (by position, so the
/// document's order and bytes of other members are kept), or the n-th element of an array.
public enum JSONLocation: Sendable, Equatable, Hashable {
    case member(Int)
    case element(Int)
}

/// Why a selector cannot be used. Names the selector, never a value.
public struct SelectorError: Error, Sendable, Equatable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

extension JSONValue {
    /// The value at `location`, if there is one.
    public func value(at location: [JSONLocation]) -> JSONValue? {
        var current = self
        for step in location {
            switch (step, current) {
            case let (.member(i), .object(members)) where i < members.count: current = members[i].value
            case let (.element(i), .array(elements)) where i < elements.count: current = elements[i]
            default: return nil
            }
        }
        return current
    }

    /// Replaces the value at `location` (nothing happens when there is none).
    public mutating func replace(at location: ArraySlice<JSONLocation>, with new: JSONValue) {
        guard let step = location.first else {
            self = new
            return
        }
        switch (step, self) {
        case (.member(let i), .object(var members)) where i < members.count:
            members[i].value.replace(at: location.dropFirst(), with: new)
            self = .object(members)
        case (.element(let i), .array(var elements)) where i < elements.count:
            elements[i].replace(at: location.dropFirst(), with: new)
            self = .array(elements)
        default:
            return
        }
    }
}
