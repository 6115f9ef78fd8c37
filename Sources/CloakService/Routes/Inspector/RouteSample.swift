import CloakCore
import CloakHTTP

/// A request to try a route with (issue 59, item 2): what a client would send the route, read
/// from one JSON document, the same for `cloak routes test --request FILE` and
/// `POST /admin/routes/{id}/test`:
///
/// ```json
/// {"method": "POST", "path": "/v1/charges", "headers": {"Content-Type": "application/json"},
///  "body": {"card": "tok_sandbox_…", "amount": 1000}}
/// ```
///
/// `path` is what follows the route's own path (an egress route's whole path); `query` is
/// optional; `body` is a JSON value (sent as written) or `body_text` a string. Never logged or
/// kept: its description gives sizes only.
struct RouteSample: Sendable, CustomStringConvertible {
    var method: HTTPMethod
    var path: String
    var query: String?
    var headers: [(name: String, value: String)]
    var body: [UInt8]

    static let maxHeaders = 64

    var description: String { "RouteSample(\(method.rawValue), \(headers.count) headers, \(body.count) body bytes)" }

    /// - Throws: 1002 naming the member that is wrong, never quoting a value.
    init(json document: JSONValue) throws(CloakError) {
        guard let members = document.objectMembers else { throw .malformed("the sample must be a JSON object") }
        let known: Set<String> = ["method", "path", "query", "headers", "body", "body_text"]
        for member in members where !known.contains(member.key) {
            throw .malformed("the sample has an unknown member \"\(Redaction.scrub(member.key, limit: 32))\"")
        }
        guard let methodText = document["method"]?.stringValue, let method = HTTPMethod(rawValue: methodText) else {
            throw .malformed("sample.method must be an HTTP method (GET, POST, PUT, PATCH, DELETE)")
        }
        guard let path = document["path"]?.stringValue, path.hasPrefix("/") || path.isEmpty,
            path.utf8.count <= 2048, path.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F })
        else { throw .malformed("sample.path must be a path (\"/v1/charges\"), printable, at most 2048 bytes") }
        self.method = method
        self.path = path
        if let query = document["query"] {
            guard let text = query.stringValue, text.utf8.count <= 2048,
                text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F })
            else { throw .malformed("sample.query must be a printable string of at most 2048 bytes") }
            self.query = text
        }
        headers = []
        switch document["headers"] {
        case nil: break
        case let .object(pairs)?:
            for pair in pairs {
                guard let value = pair.value.stringValue else {
                    throw .malformed("sample.headers values must be strings")
                }
                headers.append((pair.key, value))
            }
        case let .array(items)?:
            for item in items {
                guard case let .array(pair) = item, pair.count == 2, let name = pair[0].stringValue,
                    let value = pair[1].stringValue
                else { throw .malformed("sample.headers items must be [name, value] pairs of strings") }
                headers.append((name, value))
            }
        default: throw .malformed("sample.headers must be an object or a list of [name, value] pairs")
        }
        guard headers.count <= Self.maxHeaders else { throw .malformed("sample.headers has more than 64 headers") }
        for (name, value) in headers where !HTTPSyntax.isToken(name) || !HTTPSyntax.isFieldValue(value) {
            throw .malformed("sample.headers has a name or value HTTP does not allow")
        }
        switch (document["body"], document["body_text"]) {
        case (nil, nil): body = []
        case let (json?, nil): body = JSONWriter.encode(json)
        case let (nil, text?):
            guard let text = text.stringValue else { throw .malformed("sample.body_text must be a string") }
            body = Array(text.utf8)
        default: throw .malformed("give the sample's body as body (JSON) or body_text, not both")
        }
    }
}
