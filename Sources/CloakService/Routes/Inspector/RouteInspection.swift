import CloakCore

/// What ``RouteInspector`` found: what would be sent (markers in place of every selected value),
/// which selectors took something, what the route would refuse instead, and each step's key and
/// headers. Holds no value of the sample a selector took.
struct RouteInspection: Sendable {
    struct Sent: Sendable {
        var method: String
        var url: String
        var headers: [(name: String, value: String)]
        var body: [UInt8]
    }

    struct Step: Sendable {
        var name: String
        var key: String?
        var headers: [(name: String, value: String)] = []
        var body: String?
        var error: String?
    }

    var route: String
    var door: Route.Door
    var form: String?
    var matched: [String] = []
    var missed: [String] = []
    var revealed: [String] = []
    var redacted: [String] = []
    /// Card-like values the inbound route's look found outside its selectors (nil: it did not look).
    var unselectedCards: Int?
    var files: [String] = []
    /// What the route would answer instead of sending (nil: it would send).
    var refusal: CloakError?
    var sent: Sent?
    var steps: [Step] = []

    var document: JSONValue {
        func pairs(_ headers: [(name: String, value: String)]) -> JSONValue {
            .array(headers.map { .array([.string($0.name), .string($0.value)]) })
        }
        var members: [(key: String, value: JSONValue)] = [
            ("route", .string(route)), ("door", .string(door == .inbound ? "inbound" : "egress")),
            ("would_send", .bool(refusal == nil && sent != nil)),
            (
                "selectors",
                .object([
                    ("matched", .strings(matched)), ("missed", .strings(missed)),
                    ("revealed", .strings(revealed)), ("redacted", .strings(redacted)),
                ])
            ),
        ]
        if let form { members.append(("form", .string(form))) }
        if !files.isEmpty { members.append(("file_selectors", .strings(files))) }
        if let unselectedCards { members.append(("unselected_cards_found", .int(unselectedCards))) }
        if let refusal {
            members.append(
                (
                    "refusal",
                    .object([
                        ("code", .int(refusal.code.rawValue)), ("status", .int(refusal.code.httpStatus)),
                        ("description", .string(refusal.message)),
                    ])
                ))
        }
        if let sent {
            members.append(
                (
                    "request",
                    .object([
                        ("method", .string(sent.method)), ("url", .string(sent.url)), ("headers", pairs(sent.headers)),
                        ("body", .string(String(decoding: sent.body, as: UTF8.self))),
                    ])
                ))
        }
        members.append(
            (
                "steps",
                .array(
                    steps.map { step in
                        var fields: [(key: String, value: JSONValue)] = [("name", .string(step.name))]
                        if let key = step.key { fields.append(("key", .string(key))) }
                        fields.append(("headers", pairs(step.headers)))
                        if let body = step.body { fields.append(("body", .string(body))) }
                        if let error = step.error { fields.append(("error", .string(error))) }
                        return .object(fields)
                    })
            ))
        return .object(members)
    }
}
