import CloakCore
import CloakHTTP
import CloakVault

/// A route's `request:` redact operations on one message: the values its selectors pick in the
/// body (by `Content-Type`) and headers become aliases, all in one vault job, and every other
/// byte goes on as it came. A message with nothing selected goes on byte-identical.
struct RouteRedaction: Sendable {
    /// One value to alias and where it goes back.
    enum Place: Sendable {
        case json(Int)
        case form(Int)
        case header(Int)
    }

    let json: JSONSelection?
    let form: FormSelection?
    /// The selected headers, as indices into the request's headers.
    let headers: [Int]
    let places: [Place]
    let requests: [AliasRequest]

    /// Selects what the operations pick in `request`.
    /// - Throws: 1002 when a body of a selected kind does not parse, or a JSON selector picks a
    ///   value that is not a string or number (named by its path, never quoted).
    init(_ request: HTTPRequest, operations: [ServiceConfiguration.RouteOperation]) throws(CloakError) {
        let kind = SelectableBody(contentType: request.header("Content-Type"))
        var places: [Place] = []
        var requests: [AliasRequest] = []
        func add(_ place: Place, _ text: String, _ op: ServiceConfiguration.RouteOperation) {
            places.append(place)
            requests.append(AliasRequest(value: text, format: op.format, storage: op.storage))
        }
        // The first operation that names a path, key or header decides its format.
        var json: JSONSelection?
        let paths = operations.flatMap(\.json)
        if kind == .json, !paths.isEmpty, !request.body.isEmpty {
            json = try JSONSelection.select(paths, in: request.body)
            for (i, match) in (json?.matches ?? []).enumerated() {
                add(.json(i), match.text.value, operations.first { $0.json.contains { $0.description == match.path } }!)
            }
        }
        var form: FormSelection?
        let keys = Set(operations.flatMap(\.form))
        if kind == .form, !keys.isEmpty, !request.body.isEmpty {
            form = try FormSelection.select(keys, in: request.body)
            for (i, match) in (form?.matches ?? []).enumerated() {
                add(.form(i), match.text.value, operations.first { $0.form.contains(match.key) }!)
            }
        }
        var headers: [Int] = []
        for (index, header) in request.headers.enumerated() {
            guard let op = operations.first(where: { $0.header.contains { $0.caseInsensitiveEquals(header.name) } }) else { continue }
            add(.header(headers.count), header.value, op)
            headers.append(index)
        }
        self.json = json
        self.form = form
        self.headers = headers
        self.places = places
        self.requests = requests
    }

    /// The body and headers with `aliases[i]` in place of the i-th selected value.
    func apply(_ aliases: [String], to request: HTTPRequest) -> (body: [UInt8], headers: [(name: String, value: String)]) {
        var jsonTexts: [String] = [], formTexts: [String] = []
        var headers = request.headers
        for (place, alias) in zip(places, aliases) {
            switch place {
            case .json: jsonTexts.append(alias)
            case .form: formTexts.append(alias)
            case let .header(i): headers[self.headers[i]].value = alias
            }
        }
        var body = request.body
        if let json { body = json.rewrite(jsonTexts) }
        if let form { body = form.rewrite(formTexts) }
        return (body, headers)
    }
}
