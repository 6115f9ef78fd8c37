/// Reads a BIN table an operator imports (issue 48), CSV with a header line or JSON Lines, and
/// refuses it whole unless every row is sound: `low` and `high` digits of one length (6 to 19),
/// `low` not above `high`, no two ranges of one length overlapping (both line numbers named),
/// `funding` and `segment` among their values, `country` an ISO 3166-1 alpha-2 code (or `XK`),
/// `currency` an ISO 4217 code, the text UTF-8, no line over 4 KiB. A column Cloak does not read is
/// refused (forgetting `--map bank=issuer` would replace a table with one without issuers) unless
/// it is named in ``ignored``; ``mapping`` renames the source's columns. Pure: the caller gives the bytes.
public struct BinTableReader: Sendable {
    public enum Format: String, Sendable, CaseIterable {
        case csv, jsonl
    }

    /// The columns Cloak reads.
    public static let columns = [
        "low", "high", "brand", "funding", "segment", "issuer", "country", "currency", "product",
    ]
    /// Longest line read.
    public static let maxLineBytes = 4096
    /// Problems listed before the rest are only counted.
    public static let maxProblems = 20

    /// Why a table was refused: its problems, each naming its line.
    public struct Refusal: Error, Sendable, Equatable, CustomStringConvertible {
        public var problems: [String]
        /// Problems past ``BinTableReader/maxProblems`` (counted, not listed).
        public var more: Int
        public var description: String {
            (problems + (more > 0 ? ["… and \(more) more"] : [])).joined(separator: "\n")
        }
    }

    /// A row as read, compact (a table has hundreds of thousands): its line, its range's length
    /// and bounds, and the index of its attributes in ``Table/attributes``.
    public struct Row: Sendable, Equatable {
        public var line: Int32
        public var length: UInt8
        public var low: UInt64
        public var high: UInt64
        public var attributes: UInt32

        /// A bound as digits, with its leading zeros.
        public static func digits(_ value: UInt64, length: UInt8) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, Int(length) - text.utf8.count)) + text
        }
    }

    /// What was read: the rows, and the distinct attributes they point into.
    public struct Table: Sendable {
        public var rows: [Row] = []
        public var attributes: [CardAttributes] = []

        public func attributes(of row: Row) -> CardAttributes { attributes[Int(row.attributes)] }
    }

    public var format: Format
    /// Source column → Cloak column (`--map issuer_name=issuer,…`).
    public var mapping: [String: String]
    /// Source columns read past on purpose (`--ignore-columns a,b`); any other unknown one is a problem.
    public var ignored: Set<String>

    public init(format: Format, mapping: [String: String] = [:], ignored: Set<String> = []) {
        self.format = format
        self.mapping = mapping
        self.ignored = ignored
    }

    /// The problem of an unknown column, naming both ways out.
    static func unknown(_ name: String, line: Int) -> String {
        "line \(line): unknown column \"\(name)\" (rename it to one Cloak reads with --map \(name)=COLUMN, or "
            + "read past it with --ignore-columns \(name); columns: \(columns.joined(separator: ", ")))"
    }

    /// Reads `--map a=b,c=d`; nil when a pair is not `source=column` with a known column.
    public static func mapping(_ text: String) -> [String: String]? { try? ColumnMap.mapping(text, reads: columns) }

    /// Every row of `bytes`, or the refusal listing what is wrong.
    public func read(_ bytes: [UInt8]) throws(Refusal) -> Table {
        var problems: [String] = []
        var more = 0
        func problem(_ text: String) {
            if problems.count < Self.maxProblems { problems.append(text) } else { more += 1 }
        }
        var table = Table()
        table.rows.reserveCapacity(bytes.count / 48)
        var interned: [CardAttributes: UInt32] = [:]
        var unknownKeys = Set<String>()
        /// For each CSV column, the index of the Cloak column it is (nil: ignored).
        var header: [Int?]?
        var lineNumber = 0
        // A UTF-8 byte order mark (spreadsheets write one) is not part of the first column's name.
        var start = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        var values = [String?](repeating: nil, count: Self.columns.count)
        while start < bytes.count {
            var end = start
            while end < bytes.count && bytes[end] != 0x0A { end += 1 }
            lineNumber += 1
            defer { start = end + 1 }
            var line = bytes[start..<end]
            if line.last == 0x0D { line = line.dropLast() }
            guard line.count <= Self.maxLineBytes else {
                problem("line \(lineNumber): longer than \(Self.maxLineBytes) bytes")
                continue
            }
            guard UTF8Validation.isValid(line) else {
                problem("line \(lineNumber): not UTF-8")
                continue
            }
            if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { continue }
            for i in values.indices { values[i] = nil }
            switch format {
            case .csv:
                guard let fields = Self.csvFields(line) else {
                    problem("line \(lineNumber): a quoted field is not closed")
                    continue
                }
                guard let columns = header else {
                    header = fields.map { name in
                        let trimmed = name.trimmingSpaces()
                        let column = Self.columns.firstIndex(of: mapping[trimmed] ?? trimmed)
                        if column == nil, !ignored.contains(trimmed) {
                            problem(Self.unknown(trimmed, line: lineNumber))
                        }
                        return column
                    }
                    for (i, column) in ["low", "high"].enumerated() where !(header!.contains(i)) {
                        problem("line 1: no column \(column) (columns: \(Self.columns.joined(separator: ", ")))")
                    }
                    continue
                }
                for (column, field) in zip(columns, fields) {
                    if let column { values[column] = field }
                }
            case .jsonl:
                guard case .object(let members)? = try? JSONParser().parse(Array(line)) else {
                    problem("line \(lineNumber): not a JSON object")
                    continue
                }
                for (key, value) in members {
                    guard let column = Self.columns.firstIndex(of: mapping[key] ?? key) else {
                        if !ignored.contains(key), unknownKeys.insert(key).inserted {
                            problem(Self.unknown(key, line: lineNumber))
                        }
                        continue
                    }
                    switch value {
                    case .string(let s): values[column] = s
                    case .number(let n): values[column] = n
                    case .null: continue
                    default: problem("line \(lineNumber): \(Self.columns[column]) is not a string")
                    }
                }
            }
            if let (low, high, attributes) = Self.row(values, line: lineNumber, problem: problem) {
                let index: UInt32
                if let known = interned[attributes] {
                    index = known
                } else {
                    index = UInt32(table.attributes.count)
                    interned[attributes] = index
                    table.attributes.append(attributes)
                }
                table.rows.append(
                    Row(
                        line: Int32(clamping: lineNumber), length: UInt8(low.utf8.count), low: UInt64(low)!,
                        high: UInt64(high)!, attributes: index))
            }
        }
        if format == .csv && header == nil { problem("the table is empty (no header line)") }
        if problems.isEmpty { Self.overlaps(table.rows, problem: problem) }
        guard problems.isEmpty else { throw Refusal(problems: problems, more: more) }
        return table
    }

    static func row(_ values: [String?], line: Int, problem: (String) -> Void) -> (
        low: String, high: String, attributes: CardAttributes
    )? {
        func value(_ name: String) -> String? {
            guard let text = values[columns.firstIndex(of: name)!], !text.isEmpty else { return nil }
            return text
        }
        guard let low = value("low"), let high = value("high") else {
            problem("line \(line): low and high are required")
            return nil
        }
        var ok = true
        let digits = { (s: String) in s.utf8.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") } }
        if !digits(low) || !digits(high) {
            problem("line \(line): low and high are digits only")
            ok = false
        } else if low.utf8.count != high.utf8.count {
            problem("line \(line): low and high have different lengths (\(low.utf8.count) and \(high.utf8.count))")
            ok = false
        } else if !(BinTable.shortestRange...BinTable.longestRange).contains(low.utf8.count) {
            problem("line \(line): a range has 6 to 19 digits, not \(low.utf8.count)")
            ok = false
        } else if low > high {
            problem("line \(line): low is above high")
            ok = false
        }
        var attributes = CardAttributes(brand: value("brand"), issuer: value("issuer"), product: value("product"))
        if let text = value("funding") {
            if let funding = CardAttributes.Funding(rawValue: text.lowercased()) {
                attributes.funding = funding
            } else {
                problem(
                    "line \(line): funding is one of \(CardAttributes.Funding.allCases.map(\.rawValue).joined(separator: ", ")) or empty"
                )
                ok = false
            }
        }
        if let text = value("segment") {
            if let segment = CardAttributes.Segment(rawValue: text.lowercased()) {
                attributes.segment = segment
            } else {
                problem("line \(line): segment is consumer, commercial or empty")
                ok = false
            }
        }
        if let text = value("country") {
            if ISOCodes.countries.contains(text.uppercased()) {
                attributes.country = text.uppercased()
            } else {
                problem("line \(line): country is not an ISO 3166-1 alpha-2 code")
                ok = false
            }
        }
        if let text = value("currency") {
            if ISOCodes.currencies.contains(text.uppercased()) {
                attributes.currency = text.uppercased()
            } else {
                problem("line \(line): currency is not an ISO 4217 code")
                ok = false
            }
        }
        return ok ? (low, high, attributes) : nil
    }

    /// Ranges of one length that overlap, each pair named by its lines.
    static func overlaps(_ rows: [Row], problem: (String) -> Void) {
        var byLength: [UInt8: [Row]] = [:]
        for row in rows { byLength[row.length, default: []].append(row) }
        for length in byLength.keys.sorted() {
            let sorted = byLength[length]!.sorted { ($0.low, $0.line) < ($1.low, $1.line) }
            var widest = sorted[0]
            for next in sorted.dropFirst() {
                if next.low <= widest.high {
                    let (a, b) = (min(widest.line, next.line), max(widest.line, next.line))
                    problem("lines \(a) and \(b): ranges of \(length) digits overlap")
                }
                if next.high > widest.high { widest = next }
            }
        }
    }

}
