import CloakCore
import CloakHTTP

/// `GET /admin/forms` (any console scope) and `GET /admin/routes` (`routes:test`): the
/// configuration's forms and routes as the console shows them. What is configured, never what
/// a configured header or key holds (a header is named, its value never shown).
struct AdminInventoryHandler: Sendable {
    let configuration: ServiceConfiguration
    let today: CalendarDate

    /// 200 `{"data": [{"name", "schema": {…the frames' schema: fields, rules, masks…},
    /// "stored_as": {field: format}}]}`, by name.
    func forms() -> Reply {
        let data = configuration.forms.keys.sorted().map { name in
            let form = configuration.forms[name]!
            let stored = form.fields.compactMap { field in
                field.tokenization.map { (key: field.name, value: JSONValue.string($0.format.rawValue)) }
            }
            return JSONValue.object([
                ("name", .string(name)), ("schema", form.browserSchema(today: today)), ("stored_as", .object(stored)),
            ])
        }
        return .now(.json(200, .object([("data", .array(data))]), headers: HTTPResponse.noStoreHeaders))
    }

    /// 200 `{"data": [{"id", "door", "match", "methods", "upstream", "form", "request": [op],
    /// "response": [op], "steps": [name], "unselected_cards", "headers": [name]}]}`, inbound
    /// routes first, each in the configuration's order.
    func routes() -> Reply {
        let all = configuration.routes + configuration.egress.routes
        return .now(
            .json(200, .object([("data", .array(all.map(Self.describe)))]), headers: HTTPResponse.noStoreHeaders))
    }

    static func describe(_ route: Route) -> JSONValue {
        let match: JSONValue
        switch route.matcher {
        case let .prefix(prefix): match = .object([("prefix", .string(prefix))])
        case let .paths(globs): match = .object([("paths", .strings(globs.map(\.description)))])
        }
        let upstream: JSONValue =
            route.upstream.map { u in
                .string("\(u.scheme.rawValue)://\(u.host):\(u.port)\(u.path)")
            } ?? .null
        let steps = route.stepNames.split(separator: ",").map { String($0) }
        return .object([
            ("id", .string(route.id)), ("door", .string(route.door == .inbound ? "inbound" : "egress")),
            ("match", match), ("methods", .strings(route.methods)), ("upstream", upstream),
            ("form", route.form.map { .string($0) } ?? .null),
            ("request", .array(route.requestOperations.map(describe))),
            ("response", .array(route.responseOperations.map(describe))),
            ("steps", .strings(steps)), ("unselected_cards", .string(route.unselectedCards.rawValue)),
            ("headers", .strings(route.headers.map(\.name))),
        ])
    }

    static func describe(_ operation: Route.Operation) -> JSONValue {
        var selectors: [JSONValue] = []
        selectors += operation.json.map { .object([("json", .string($0.description))]) }
        selectors += operation.form.map { .object([("form", .string($0))]) }
        selectors += operation.header.map { .object([("header", .string($0))]) }
        selectors += operation.multipart.map { .object([("multipart", .string($0))]) }
        return .object([
            ("action", .string(operation.action.rawValue)), ("format", .string(operation.format.rawValue)),
            ("selectors", .array(selectors)), ("required", .strings(operation.required)),
        ])
    }
}
