/// JSON Lines rows from bytes that arrive in pieces (issue 60's imports): one JSON object a
/// line, its values strings (a card number as a JSON number would lose its leading zeros or its
/// last digits, so a number is refused, not guessed at), each key once (``JSONParser`` refuses
/// a key given twice); LF or CRLF; blank lines
/// skipped. A line that breaks a rule is refused alone, with its line number, and reading goes
/// on. Memory is one line at most (``limit``), whatever the file's size.
public struct JSONLinesReader: Sendable {
    public enum Problem: Error, Sendable, Equatable, CustomStringConvertible {
        case notJSON
        case notAnObject
        case notAString(key: String)
        case lineTooLong(limit: Int)

        public var description: String {
            switch self {
            case .notJSON: return "not JSON"
            case .notAnObject: return "not a JSON object"
            case let .notAString(key): return "the value of \"\(key)\" is not a string"
            case let .lineTooLong(limit): return "a line longer than \(limit) bytes"
            }
        }
    }

    public enum Row: Sendable, Equatable {
        case object([String: String], line: Int)
        case refused(line: Int, Problem)

        public var line: Int {
            switch self {
            case let .object(_, line), let .refused(line, _): return line
            }
        }
    }

    /// The most bytes one line holds.
    public let limit: Int
    private var buffer: [UInt8] = []
    private var tooLong = false
    private var line = 1

    public init(limit: Int = 65_536) { self.limit = limit }

    /// Reads `bytes`; the rows they complete, in order.
    public mutating func feed(_ bytes: some Sequence<UInt8>) -> [Row] {
        var rows: [Row] = []
        for byte in bytes {
            guard byte == 0x0A else {
                if buffer.count < limit { buffer.append(byte) } else { tooLong = true }
                continue
            }
            if let row = endLine() { rows.append(row) }
        }
        return rows
    }

    /// The end of the input: the last line when it had no line end.
    public mutating func finish() -> Row? { endLine() }

    private mutating func endLine() -> Row? {
        defer {
            buffer.removeAll(keepingCapacity: true)
            tooLong = false
            line += 1
        }
        if buffer.last == 0x0D { buffer.removeLast() }
        if tooLong { return .refused(line: line, .lineTooLong(limit: limit)) }
        if buffer.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { return nil }
        guard let value = try? JSONParser(maxDepth: 2).parse(buffer) else { return .refused(line: line, .notJSON) }
        guard let members = value.objectMembers else { return .refused(line: line, .notAnObject) }
        var object: [String: String] = [:]
        for member in members {
            guard let text = member.value.stringValue else { return .refused(line: line, .notAString(key: member.key)) }
            object[member.key] = text
        }
        return .object(object, line: line)
    }
}
