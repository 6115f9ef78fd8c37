/// CSV as BIN tables use it: a line's fields (RFC 4180 quoting), and a table written back in
/// the canonical form its digest is taken over.
extension BinTableReader {
    /// One CSV line's fields (RFC 4180 quoting: `"…"`, `""` for a quote), unquoted fields without
    /// their outer spaces; nil for an open quote.
    static func csvFields(_ line: some Collection<UInt8>) -> [String]? {
        var fields: [String] = []
        var field: [UInt8] = []
        var quoted = false
        var wasQuoted = false
        var afterQuote = false
        var i = line.startIndex
        func close() {
            var bytes = field[...]
            if !wasQuoted {
                while bytes.first == 0x20 || bytes.first == 0x09 { bytes = bytes.dropFirst() }
                while bytes.last == 0x20 || bytes.last == 0x09 { bytes = bytes.dropLast() }
            }
            fields.append(String(decoding: bytes, as: UTF8.self))
            field.removeAll(keepingCapacity: true)
            wasQuoted = false
            afterQuote = false
        }
        while i < line.endIndex {
            let c = line[i]
            i = line.index(after: i)
            if quoted {
                if c == UInt8(ascii: "\"") {
                    if i < line.endIndex && line[i] == UInt8(ascii: "\"") {
                        field.append(c)
                        i = line.index(after: i)
                    } else {
                        quoted = false
                        afterQuote = true
                    }
                } else {
                    field.append(c)
                }
            } else if c == UInt8(ascii: ",") {
                close()
            } else if c == UInt8(ascii: "\"") && field.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) && !afterQuote {
                field.removeAll(keepingCapacity: true)
                quoted = true
                wasQuoted = true
            } else if !afterQuote || (c != 0x20 && c != 0x09) {
                field.append(c)
            }
        }
        if quoted { return nil }
        close()
        return fields
    }

    /// The canonical CSV of `table` (Cloak's columns, in order): what the store keeps, read again
    /// by every node with a reader of format `.csv`.
    public static func canonicalCSV(_ table: Table) -> [UInt8] {
        var out = Array(columns.joined(separator: ",").utf8) + [0x0A]
        out.reserveCapacity(table.rows.count * 64)
        func quoted(_ text: String?) -> String {
            guard let text else { return "" }
            guard text.contains(where: { $0 == "," || $0 == "\"" }) else { return text }
            return "\"" + text.replacingAll("\"", with: "\"\"") + "\""
        }
        for row in table.rows {
            let a = table.attributes(of: row)
            let fields = [
                Row.digits(row.low, length: row.length), Row.digits(row.high, length: row.length), quoted(a.brand),
                a.funding?.rawValue ?? "", a.segment?.rawValue ?? "", quoted(a.issuer), a.country ?? "",
                a.currency ?? "", quoted(a.product),
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
