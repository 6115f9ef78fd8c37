/// RFC 4180 rows from bytes that arrive in pieces (an import file read from disk or streamed in
/// a request body, issue 60): a UTF-8 byte order mark at the start is skipped; lines end in
/// CRLF, LF or CR; a quoted field may hold commas, line ends and `""` for a quote; blank lines
/// are skipped. Each row says the line it starts on, for the advice file.
///
/// A row that breaks a rule (a quote inside an unquoted field, text after a closing quote, bytes
/// that are not UTF-8, more than ``Limits`` allow) is answered as ``Row/refused(line:_:)`` and
/// reading goes on at the next row: one bad row is one refusal, not a lost file. Only a quote
/// still open at the end of the input is fatal (``finish()``): everything after it was read
/// as one field, so no row after it can be trusted.
///
/// Pure and bounded: memory is one row's worth at most (``Limits/rowBytes``), whatever the
/// file's size. No field is ever trimmed or reinterpreted.
public struct CSVReader: Sendable {
    public struct Limits: Sendable, Equatable {
        /// The most bytes one row holds, every field and separator counted.
        public var rowBytes: Int
        /// The most fields one row holds.
        public var fields: Int

        public init(rowBytes: Int = 65_536, fields: Int = 256) {
            self.rowBytes = rowBytes
            self.fields = fields
        }
    }

    public enum Problem: Error, Sendable, Equatable, CustomStringConvertible {
        case quoteInUnquotedField
        case textAfterClosingQuote
        case notUTF8
        case rowTooLong(limit: Int)
        case tooManyFields(limit: Int)
        /// Fatal: a quote opened on `line` is still open at the end of the input.
        case unclosedQuote(line: Int)

        public var description: String {
            switch self {
            case .quoteInUnquotedField: return "a quote inside a field that is not quoted"
            case .textAfterClosingQuote: return "text after a field's closing quote"
            case .notUTF8: return "bytes that are not UTF-8"
            case let .rowTooLong(limit): return "a row longer than \(limit) bytes"
            case let .tooManyFields(limit): return "more than \(limit) fields"
            case let .unclosedQuote(line): return "a quote opened on line \(line) is never closed"
            }
        }
    }

    public enum Row: Sendable, Equatable {
        case fields([String], line: Int)
        case refused(line: Int, Problem)

        /// The line the row starts on (from 1).
        public var line: Int {
            switch self {
            case let .fields(_, line), let .refused(line, _): return line
            }
        }
    }

    public let limits: Limits

    private enum State {
        /// At a field's start (nothing of it read yet).
        case fieldStart
        case unquoted
        case quoted
        /// A quote inside a quoted field: either a closing quote or the first of `""`.
        case quoteInQuoted
        /// After a closing quote: a comma or a line end must follow.
        case afterClosingQuote
    }

    private var state = State.fieldStart
    private var field: [UInt8] = []
    private var fields: [String] = []
    /// Bytes of the row so far, and its first problem (the rest of it is read and dropped).
    private var rowBytes = 0
    private var problem: Problem?
    /// Whether the row has anything in it: a line with nothing at all is blank.
    private var rowStarted = false
    private var line = 1
    private var rowLine = 1
    private var quoteLine = 1
    /// The previous byte was a CR (a following LF ends the same line).
    private var afterCR = false
    /// Bytes of a byte order mark matched so far; nil once the start is past.
    private var bom: Int? = 0

    public init(limits: Limits = Limits()) { self.limits = limits }

    private static let byteOrderMark: [UInt8] = [0xEF, 0xBB, 0xBF]

    /// Reads `bytes`; the rows they complete, in order.
    public mutating func feed(_ bytes: some Sequence<UInt8>) -> [Row] {
        var rows: [Row] = []
        for byte in bytes {
            if let matched = bom {
                if byte == Self.byteOrderMark[matched] {
                    bom = matched + 1 == Self.byteOrderMark.count ? nil : matched + 1
                    continue
                }
                bom = nil
                // A partial mark was text after all.
                for earlier in Self.byteOrderMark[..<matched] { if let row = consume(earlier) { rows.append(row) } }
            }
            if let row = consume(byte) { rows.append(row) }
        }
        return rows
    }

    /// The end of the input: the last row when it had no line end.
    public mutating func finish() throws(Problem) -> Row? {
        if let matched = bom, matched > 0 {
            bom = nil
            for earlier in Self.byteOrderMark[..<matched] { _ = consume(earlier) }
        }
        switch state {
        case .quoted: throw .unclosedQuote(line: quoteLine)
        default: return endRow()
        }
    }

    private mutating func consume(_ byte: UInt8) -> Row? {
        let isLF = byte == 0x0A, isCR = byte == 0x0D
        if isLF && afterCR {
            // The CR ended (and counted) the line; inside quotes the pair is the field's.
            afterCR = false
            if state == .quoted { addCounted(byte) }
            return nil
        }
        afterCR = isCR
        if isLF || isCR {
            defer { line += 1 }
            switch state {
            case .quoted:
                addCounted(byte)
                return nil
            case .quoteInQuoted, .afterClosingQuote, .fieldStart, .unquoted:
                if case .quoteInQuoted = state { state = .afterClosingQuote }
                return endRow()
            }
        }
        if !rowStarted {
            rowStarted = true
            rowLine = line
        }
        rowBytes += 1
        if rowBytes > limits.rowBytes { refuse(.rowTooLong(limit: limits.rowBytes)) }
        switch (state, byte) {
        case (.fieldStart, UInt8(ascii: "\"")):
            state = .quoted
            quoteLine = line
        case (.fieldStart, UInt8(ascii: ",")), (.unquoted, UInt8(ascii: ",")), (.afterClosingQuote, UInt8(ascii: ",")):
            closeField()
        case (.fieldStart, _), (.unquoted, _):
            if byte == UInt8(ascii: "\"") { refuse(.quoteInUnquotedField) }
            state = .unquoted
            add(byte)
        case (.quoted, UInt8(ascii: "\"")):
            state = .quoteInQuoted
        case (.quoted, _):
            add(byte)
        case (.quoteInQuoted, UInt8(ascii: "\"")):
            state = .quoted
            add(byte)
        case (.quoteInQuoted, UInt8(ascii: ",")):
            closeField()
        case (.quoteInQuoted, _), (.afterClosingQuote, _):
            state = .afterClosingQuote
            refuse(.textAfterClosingQuote)
        }
        return nil
    }

    /// A line end inside a quoted field: part of it, and of the row's length.
    private mutating func addCounted(_ byte: UInt8) {
        rowBytes += 1
        if rowBytes > limits.rowBytes { refuse(.rowTooLong(limit: limits.rowBytes)) }
        add(byte)
    }

    private mutating func add(_ byte: UInt8) {
        guard problem == nil else { return }
        field.append(byte)
    }

    private mutating func refuse(_ why: Problem) {
        if problem == nil { problem = why }
    }

    private mutating func closeField() {
        defer {
            field.removeAll(keepingCapacity: true)
            state = .fieldStart
        }
        guard problem == nil else { return }
        guard fields.count < limits.fields else { return refuse(.tooManyFields(limit: limits.fields)) }
        guard let text = String(validating: field, as: UTF8.self) else { return refuse(.notUTF8) }
        fields.append(text)
    }

    /// Ends the row under way: nil for a blank line.
    private mutating func endRow() -> Row? {
        let blank = !rowStarted && state == .fieldStart
        if !blank { closeField() }
        defer {
            fields.removeAll(keepingCapacity: true)
            field.removeAll(keepingCapacity: true)
            state = .fieldStart
            rowBytes = 0
            problem = nil
            rowStarted = false
        }
        if blank { return nil }
        if let problem { return .refused(line: rowLine, problem) }
        return .fields(fields, line: rowLine)
    }
}
