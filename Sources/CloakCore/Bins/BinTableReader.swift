/// Reads a BIN table an operator imports (issue 48), CSV with a header line or JSON Lines, and
/// refuses it whole unless every row is sound: `low` and `high` digits of one length (6 to 19),
/// `low` not above `high`, no two ranges of one length overlapping (both line numbers named),
/// `funding` and `segment` among their values, `country` an ISO 3166-1 alpha-2 code (or `XK`),
/// `currency` an ISO 4217 code, the text UTF-8, no line over 4 KiB. Unknown columns are ignored;
/// ``Mapping`` renames the source's columns. Pure: the caller gives the bytes.
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

    /// A row as read, with its line.
    public struct Row: Sendable, Equatable {
        public var line: Int
        public var low: String
        public var high: String
        public var attributes: CardAttributes
    }

    public var format: Format
    /// Source column → Cloak column (`--map issuer_name=issuer,…`).
    public var mapping: [String: String]

    public init(format: Format, mapping: [String: String] = [:]) {
        self.format = format
        self.mapping = mapping
    }

    /// Reads `--map a=b,c=d`; nil when a pair is not `source=column` with a known column.
    public static func mapping(_ text: String) -> [String: String]? {
        var out: [String: String] = [:]
        for pair in text.split(separator: ",") {
            let parts = pair.split(separator: "=", maxSplits: 1).map { String($0).trimmingSpaces() }
            guard parts.count == 2, !parts[0].isEmpty, columns.contains(parts[1]) else { return nil }
            out[parts[0]] = parts[1]
        }
        return out
    }

    /// Every row of `bytes`, or the refusal listing what is wrong.
    public func read(_ bytes: [UInt8]) throws(Refusal) -> [Row] {
        var problems: [String] = []
        var more = 0
        func problem(_ text: String) {
            if problems.count < Self.maxProblems { problems.append(text) } else { more += 1 }
        }
        var rows: [Row] = []
        var header: [String?]?
        var lineNumber = 0
        var start = 0
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
            guard let text = UTF8Validation.string(line) else {
                problem("line \(lineNumber): not UTF-8")
                continue
            }
            if text.allSatisfy({ $0 == " " || $0 == "\t" }) { continue }
            let values: [String: String]
            switch format {
            case .csv:
                guard let fields = Self.csvFields(text) else {
                    problem("line \(lineNumber): a quoted field is not closed")
                    continue
                }
                guard let names = header else {
                    header = fields.map { name in
                        let trimmed = name.trimmingSpaces()
                        let renamed = mapping[trimmed] ?? trimmed
                        return Self.columns.contains(renamed) ? renamed : nil
                    }
                    for column in ["low", "high"] where !(header!.contains(column)) {
                        problem("line 1: no column \(column) (columns: \(Self.columns.joined(separator: ", ")))")
                    }
                    continue
                }
                var row: [String: String] = [:]
                for (name, value) in zip(names, fields) { if let name { row[name] = value } }
                values = row
            case .jsonl:
                guard case .object(let members)? = try? JSONParser().parse(Array(text.utf8)) else {
                    problem("line \(lineNumber): not a JSON object")
                    continue
                }
                var row: [String: String] = [:]
                for (key, value) in members {
                    let name = mapping[key] ?? key
                    guard Self.columns.contains(name) else { continue }
                    switch value {
                    case .string(let s): row[name] = s
                    case .number(let n): row[name] = n
                    case .null: continue
                    default: problem("line \(lineNumber): \(name) is not a string")
                    }
                }
                values = row
            }
            if let row = Self.row(values, line: lineNumber, problem: problem) { rows.append(row) }
        }
        if format == .csv && header == nil { problem("the table is empty (no header line)") }
        if problems.isEmpty { Self.overlaps(rows, problem: problem) }
        guard problems.isEmpty else { throw Refusal(problems: problems, more: more) }
        return rows
    }

    private static func row(_ values: [String: String], line: Int, problem: (String) -> Void) -> Row? {
        func value(_ name: String) -> String? {
            guard let text = values[name]?.trimmingSpaces(), !text.isEmpty else { return nil }
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
        return ok ? Row(line: line, low: low, high: high, attributes: attributes) : nil
    }

    /// Ranges of one length that overlap, each pair named by its lines.
    private static func overlaps(_ rows: [Row], problem: (String) -> Void) {
        var byLength: [Int: [(low: UInt64, high: UInt64, line: Int)]] = [:]
        for row in rows {
            byLength[row.low.utf8.count, default: []].append((UInt64(row.low)!, UInt64(row.high)!, row.line))
        }
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

    /// One CSV line's fields (RFC 4180 quoting: `"…"`, `""` for a quote); nil for an open quote.
    static func csvFields(_ line: String) -> [String]? {
        var fields: [String] = []
        var field = ""
        var quoted = false
        var chars = line.makeIterator()
        var atStart = true
        while let c = chars.next() {
            if quoted {
                if c == "\"" {
                    var lookahead = chars
                    if lookahead.next() == "\"" {
                        field.append("\"")
                        chars = lookahead
                    } else {
                        quoted = false
                    }
                } else {
                    field.append(c)
                }
            } else if c == "\"" && atStart {
                quoted = true
                atStart = false
            } else if c == "," {
                fields.append(field)
                field = ""
                atStart = true
            } else {
                field.append(c)
                atStart = false
            }
        }
        if quoted { return nil }
        fields.append(field)
        return fields
    }

    /// The canonical CSV of `rows` (Cloak's columns, in order): what the store keeps, read again
    /// by every node with a reader of format `.csv`.
    public static func canonicalCSV(_ rows: [Row]) -> [UInt8] {
        var out = Array(columns.joined(separator: ",").utf8) + [0x0A]
        out.reserveCapacity(rows.count * 64)
        func quoted(_ text: String?) -> String {
            guard let text else { return "" }
            guard text.contains(where: { $0 == "," || $0 == "\"" }) else { return text }
            return "\"" + text.replacingAll("\"", with: "\"\"") + "\""
        }
        for row in rows {
            let a = row.attributes
            let fields = [
                row.low, row.high, quoted(a.brand), a.funding?.rawValue ?? "", a.segment?.rawValue ?? "",
                quoted(a.issuer), a.country ?? "", a.currency ?? "", quoted(a.product),
            ]
            out += Array(fields.joined(separator: ",").utf8)
            out.append(0x0A)
        }
        return out
    }
}

extension String {
    fileprivate func replacingAll(_ target: Character, with replacement: String) -> String {
        var out = ""
        for c in self { if c == target { out += replacement } else { out.append(c) } }
        return out
    }
}
