/// The values some JSON paths select in one body, and the body with new values in their place.
/// Redacting (values → aliases) and revealing (aliases → values) are both a ``select`` and a
/// ``rewrite``; the vault work in between happens elsewhere.
///
/// - A body in which nothing is selected is not a selection (`nil`): it goes on byte-identical.
/// - A selected value must be a string or a number: anything else is 1002 naming the path.
/// - A number stays a number when its replacement is one (a card number sent as a JSON number
///   and aliased in a numeric format comes back as one after redact then reveal); otherwise the
///   replacement is a string (a number aliased as a UUID is revealed as the same digits, quoted).
public struct JSONSelection: Sendable {
    public struct Match: Sendable {
        /// The path that selected it (for errors and operations).
        public let path: String
        public let location: [JSONLocation]
        /// The selected text (a string's contents or a number's digits).
        public let text: Sensitive<String>
        public let wasNumber: Bool
    }

    public let document: JSONValue
    /// Every selected value once, in the order of the paths, then of the document.
    public let matches: [Match]

    /// Parses `body` and selects what `paths` point at.
    /// - Throws: 1002 when the body is not JSON or a selected value is not a string or number.
    public static func select(_ paths: [JSONPath], in body: [UInt8]) throws(CloakError) -> JSONSelection? {
        let document: JSONValue
        do { document = try JSONParser().parse(body) } catch {
            throw .malformed("the JSON body does not parse: \(error.description)")
        }
        var seen = Set<[JSONLocation]>()
        var matches: [Match] = []
        for path in paths {
            for location in path.locations(in: document) where seen.insert(location).inserted {
                switch document.value(at: location) {
                case let .string(s)?:
                    matches.append(
                        Match(path: path.description, location: location, text: Sensitive(s), wasNumber: false))
                case let .number(n)?:
                    matches.append(
                        Match(path: path.description, location: location, text: Sensitive(n), wasNumber: true))
                case let other?:
                    throw .malformed(
                        "\(path.description) selects a JSON \(other.typeName); only strings and numbers can be redacted or revealed"
                    )
                case nil:
                    continue
                }
            }
        }
        return matches.isEmpty ? nil : JSONSelection(document: document, matches: matches)
    }

    /// The body with `replacements[i]` in place of `matches[i]`.
    public func rewrite(_ replacements: [String]) -> [UInt8] {
        precondition(replacements.count == matches.count, "one replacement per match")
        var out = document
        for (match, text) in zip(matches, replacements) {
            let value: JSONValue = match.wasNumber && Self.isNumber(text) ? .number(text) : .string(text)
            out.replace(at: match.location[...], with: value)
        }
        return JSONWriter.encode(out)
    }

    static func isNumber(_ text: String) -> Bool {
        guard let first = text.utf8.first, first == UInt8(ascii: "-") || (first >= 48 && first <= 57) else {
            return false
        }
        if case .number? = try? JSONParser().parse(text) { return true }
        return false
    }
}
