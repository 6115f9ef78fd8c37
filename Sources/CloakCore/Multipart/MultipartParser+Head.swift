/// A part's head: its `Content-Disposition` (name, file name) and type; and the boundary a
/// `Content-Type` names.
extension MultipartParser {
    /// The head's fields: `Content-Disposition` (once, `form-data`, a name, maybe a file name)
    /// and `Content-Type` (at most once); others are ignored. nil for anything malformed.
    func readHead() -> PartHead? {
        // Every field line with its CRLF; the head's empty line left out.
        let text = head.dropLast(2)
        var disposition: PartHead?
        var contentType: String?
        for line in text.split(separator: 10, omittingEmptySubsequences: false).dropLast() {
            guard line.last == 13 else { return nil }
            let field = line.dropLast()
            guard let colon = field.firstIndex(of: UInt8(ascii: ":")) else { return nil }
            let name = String(decoding: field[..<colon], as: UTF8.self).lowercased()
            guard !name.isEmpty, name.utf8.allSatisfy({ $0 > 32 && $0 < 127 }) else { return nil }
            let value = String(decoding: field[(colon + 1)...], as: UTF8.self).trimmingSpaces()
            guard value.unicodeScalars.allSatisfy({ $0.value >= 32 && $0.value != 127 }) else { return nil }
            switch name {
            case "content-disposition":
                guard disposition == nil, let parsed = Self.disposition(value) else { return nil }
                disposition = parsed
            case "content-type":
                guard contentType == nil else { return nil }
                contentType = value
            default:
                continue
            }
        }
        guard var result = disposition else { return nil }
        result.contentType = contentType
        return result
    }

    /// `form-data; name="…"; filename="…"` (values quoted or tokens; a quoted value has no `"`:
    /// browsers send it as `%22`).
    static func disposition(_ value: String) -> PartHead? {
        var rest = Substring(value)
        guard let semicolon = rest.firstIndex(of: ";") ?? Optional(rest.endIndex),
            rest[..<semicolon].trimmingSpaces().lowercased() == "form-data"
        else { return nil }
        rest = rest[semicolon...]
        var name: String?
        var fileName: String?
        while let first = rest.first, first == ";" {
            rest = rest.dropFirst().drop { $0 == " " || $0 == "\t" }
            guard let equals = rest.firstIndex(of: "=") else { return nil }
            let key = rest[..<equals].lowercased()
            rest = rest[rest.index(after: equals)...]
            var parameter: String
            if rest.first == "\"" {
                rest = rest.dropFirst()
                guard let close = rest.firstIndex(of: "\"") else { return nil }
                parameter = String(rest[..<close])
                rest = rest[rest.index(after: close)...]
            } else {
                let end = rest.firstIndex(of: ";") ?? rest.endIndex
                parameter = String(rest[..<end]).trimmingSpaces()
                rest = rest[end...]
            }
            rest = rest.drop { $0 == " " || $0 == "\t" }
            switch key {
            case "name":
                guard name == nil else { return nil }
                name = parameter
            case "filename":
                guard fileName == nil else { return nil }
                fileName = parameter
            case "filename*":
                return nil  // not sent by browsers for form-data (RFC 7578 4.2): refused, not guessed
            default:
                continue
            }
        }
        guard rest.isEmpty, let name else { return nil }
        return PartHead(name: name, fileName: fileName, contentType: nil)
    }

    /// The boundary of a `multipart/form-data` `Content-Type` (1 to 70 of RFC 2046's `bchars`,
    /// quoted or not); nil for another type or a boundary that breaks the rules.
    /// RFC 2046's `bchars`.
    static let boundaryBytes = Set(
        "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ'()+_,-./:=? ".utf8)

    public static func boundary(contentType: String) -> [UInt8]? {
        let parts = contentType.split(separator: ";").map { $0.trimmingSpaces() }
        guard parts.first?.lowercased() == "multipart/form-data" else { return nil }
        var found: [UInt8]?
        for parameter in parts.dropFirst() {
            guard let equals = parameter.firstIndex(of: "=") else { return nil }
            guard parameter[..<equals].lowercased() == "boundary" else { continue }
            guard found == nil else { return nil }
            var value = parameter[parameter.index(after: equals)...]
            if value.first == "\"" {
                guard value.count >= 2, value.last == "\"" else { return nil }
                value = value.dropFirst().dropLast()
            }
            let bytes = Array(value.utf8)
            guard (1...70).contains(bytes.count), bytes.allSatisfy(boundaryBytes.contains), bytes.last != 32 else {
                return nil
            }
            found = bytes
        }
        return found
    }
}

extension StringProtocol {
    /// The text without its leading and trailing spaces and tabs.
    public func trimmingSpaces() -> String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
