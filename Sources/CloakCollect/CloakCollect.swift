import CloakCore
import Foundation

/// A form of a Cloak server, collected natively: fields built from the schema the server serves,
/// their states computed on the device by the server's own rule engine (CloakCore), and
/// submissions posted to the form's endpoints.
///
/// ```swift
/// let collect = CloakCollect(server: URL(string: "https://cloak.example")!, form: "checkout")
/// try await collect.loadSchema()
/// let number = try collect.field("card_data.card_number")
/// number.replace(0..<0, with: "4111111111111111")   // number.text == "4111 1111 1111 1111"
/// let answer = try await collect.submit(.tokens)
/// ```
///
/// Thread-safe: every field's state is behind one lock; observers are called after it is let go.
public final class CloakCollect: @unchecked Sendable, CustomStringConvertible, CustomReflectable {
    public let server: URL
    public let form: String
    private let transport: any CloakTransport
    private let lock = NSLock()
    // Guarded by `lock`:
    private var schema: BrowserSchema?
    private var editors: [FieldEditor] = []
    private var focused: Set<Int> = []
    private var fields: [Int: CloakField] = [:]
    private var observers: [Int: @Sendable (CloakField) -> Void] = [:]
    private var headers: [String: String] = [:]

    public init(server: URL, form: String, transport: any CloakTransport = URLSessionTransport()) {
        self.server = server
        self.form = form
        self.transport = transport
    }

    /// Headers sent with every submission (a session of your backend, say): never a Cloak
    /// token, which belongs on your backend.
    public var customHeaders: [String: String] {
        get { locked { headers } }
        set { locked { headers = newValue } }
    }

    /// Fetches the form's schema (`GET /elements/v1/forms/{form}`, which needs `elements.native`
    /// on the server). Call it once, before making fields; a second call starts the form afresh.
    public func loadSchema() async throws {
        let url = try endpoint("/elements/v1/forms/\(Self.pathComponent(form))")
        let answer = try await transport.send(CloakHTTPRequest(method: "GET", url: url))
        guard answer.status == 200 else {
            throw CloakCollectError(
                code: "schema_unavailable",
                message:
                    "Cloak answered \(answer.status) for the form's schema (is elements.native on, and the form named?)"
            )
        }
        let loaded: BrowserSchema
        do {
            loaded = try BrowserSchema(try JSONParser().parse(Array(answer.body)))
        } catch let error as CloakError {
            throw CloakCollectError(code: "schema_invalid", message: "the schema could not be read: \(error.message)")
        } catch {
            throw CloakCollectError(code: "schema_invalid", message: "the schema is not JSON")
        }
        locked {
            schema = loaded
            editors = loaded.form.fields.map { FieldEditor(schema: $0, brands: loaded.form.brands) }
            focused = []
            fields = [:]
            observers = [:]
        }
    }

    /// The form's field names, in the server's order (empty before ``loadSchema()``).
    public var fieldNames: [String] { locked { schema?.form.fields.map(\.name) ?? [] } }

    /// The field `name`: the same object every time.
    /// - Throws: `schema_not_loaded`, or `unknown_field` when the form has no such field.
    public func field(_ name: String) throws -> CloakField {
        try locked { () throws(CloakCollectError) -> CloakField in
            guard let schema else {
                throw CloakCollectError(code: "schema_not_loaded", message: "call loadSchema() before making fields")
            }
            guard let index = schema.form.index(of: name) else {
                throw CloakCollectError(code: "unknown_field", message: "the form \(form) has no field \(name)")
            }
            if let made = fields[index] { return made }
            let field = schema.form.fields[index]
            let presentation = schema.presentation[name]
            let made = CloakField(
                name: name, index: index,
                configuration: CloakFieldConfiguration(
                    name: name, type: field.type.rawValue, title: presentation?.title ?? name,
                    autocomplete: presentation?.autocomplete ?? "off", isNumeric: presentation?.isNumeric ?? false,
                    isSecureEntry: field.type == .cvc),
                collect: self)
            fields[index] = made
            return made
        }
    }

    /// Every field's state and the form's pre-send check, as the server would answer them.
    public var state: CloakFormState {
        locked {
            guard let schema else { return CloakFormState(isValid: false, fields: [:]) }
            let validation = validationLocked(schema)
            var states: [String: CloakFieldState] = [:]
            for (i, field) in schema.form.fields.enumerated() {
                states[field.name] = stateLocked(i, validation)
            }
            return CloakFormState(isValid: validation.isValid, fields: states)
        }
    }

    /// Empties every field.
    public func clearAll() {
        let indices = locked { editors.indices.map { $0 } }
        for i in indices { edit(i) { $0.clear() } }
    }

    // MARK: Fields (called by CloakField)

    func read<T>(_ index: Int, _ body: (FieldEditor) -> T) -> T? {
        locked { editors.indices.contains(index) ? body(editors[index]) : nil }
    }

    func edit(_ index: Int, _ change: (inout FieldEditor) -> Void) {
        let notify = locked { () -> [(CloakField, @Sendable (CloakField) -> Void)] in
            guard editors.indices.contains(index), let schema else { return [] }
            change(&editors[index])
            var touched = [index]
            // A card's brand decides the lengths of the CVCs linked to it.
            let field = schema.form.fields[index]
            if field.type == .cardNumber {
                let model = schema.form.brands.detect(String(editors[index].raw))
                for (j, other) in schema.form.fields.enumerated()
                where other.type == .cvc && other.cardField == field.name {
                    editors[j].link(to: model)
                    touched.append(j)
                }
            }
            return touched.compactMap { i in fields[i].flatMap { f in observers[i].map { (f, $0) } } }
        }
        for (field, observer) in notify { observer(field) }
    }

    func setFocused(_ index: Int, _ isFocused: Bool) {
        let notify = locked { () -> (CloakField, @Sendable (CloakField) -> Void)? in
            if isFocused { focused.insert(index) } else { focused.remove(index) }
            return fields[index].flatMap { f in observers[index].map { (f, $0) } }
        }
        if let (field, observer) = notify { observer(field) }
    }

    func state(of index: Int) -> CloakFieldState? {
        locked {
            guard let schema, editors.indices.contains(index) else { return nil }
            return stateLocked(index, validationLocked(schema))
        }
    }

    func observer(of index: Int) -> (@Sendable (CloakField) -> Void)? { locked { observers[index] } }

    func setObserver(_ observer: (@Sendable (CloakField) -> Void)?, of index: Int) {
        locked { observers[index] = observer }
    }

    /// The whole form validated as the server does: an edited field is sent (dirty), the others
    /// are absent.
    private func validationLocked(_ schema: BrowserSchema) -> FormValidation {
        FormValidation(
            form: schema.form, values: editors.map { $0.isDirty ? $0.text : nil },
            context: ValidationContext(today: schema.today))
    }

    private func stateLocked(_ index: Int, _ validation: FormValidation) -> CloakFieldState {
        let result = validation.fields[index]
        var state =
            (try? JSONDecoder().decode(CloakFieldState.self, from: Data(JSONWriter.encode(result.state))))
            ?? CloakFieldState()
        state.isFocused = focused.contains(index)
        // One last four per number while typing (Cloak Elements' rule).
        if state.isFocused, result.schema.type == .cardNumber, let model = result.cardModel,
            state.inputLength < FieldEditor.longest(model), state.last4 != nil
        {
            state.last4 = ""
        }
        return state
    }

    // MARK: Submitting

    /// Posts the form (the VGS collect body: `{"fields": {name: text}, "extraData", "options"}`,
    /// edited fields only) to its endpoint. Every HTTP answer resolves, a 422 included; only no
    /// answer throws (`no_answer`).
    /// - Parameters:
    ///   - extraData: merged into the outgoing JSON by the server (a JSON object's members).
    ///   - mappingPolicy: how field names shape the outgoing JSON (the form's own by default).
    public func submit(
        _ kind: CloakSubmission, extraData: [String: any Sendable]? = nil, mappingPolicy: CloakMappingPolicy? = nil
    ) async throws -> CloakResponse {
        let (values, headers) = try locked { () throws(CloakCollectError) -> ([String: String], [String: String]) in
            guard schema != nil else {
                throw CloakCollectError(code: "schema_not_loaded", message: "call loadSchema() before submitting")
            }
            var values: [String: String] = [:]
            for (i, field) in (schema?.form.fields ?? []).enumerated() where editors[i].isDirty {
                values[field.name] = editors[i].text
            }
            return (values, self.headers)
        }
        var body: [String: Any] = ["fields": values]
        if let extraData {
            guard JSONSerialization.isValidJSONObject(extraData) else {
                throw CloakCollectError(code: "invalid_extra_data", message: "extraData must be a JSON object")
            }
            body["extraData"] = extraData
        }
        if let mappingPolicy { body["options"] = ["fieldNameMappingPolicy": mappingPolicy.rawValue] }
        let url = try endpoint(try kind.path(form: Self.pathComponent(form)))
        var request = CloakHTTPRequest(
            method: "POST", url: url, headers: headers, body: try JSONSerialization.data(withJSONObject: body))
        request.headers["Content-Type"] = "application/json"
        return try await transport.send(request)
    }

    // MARK: Helpers

    /// The server and form only: what the fields hold is never shown (`dump` included).
    public var description: String { "CloakCollect(\(server.absoluteString), form: \(form))" }
    public var customMirror: Mirror { Mirror(self, children: ["server": server, "form": form]) }

    /// `path` on the server, refused unless the server is HTTPS (or HTTP on this machine).
    func endpoint(_ path: String) throws -> URL {
        try Self.endpoint(server, path)
    }

    static func endpoint(_ server: URL, _ path: String) throws -> URL {
        let host = (server.host ?? "").trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        let local = ["localhost", "127.0.0.1", "::1"].contains(host)
        guard server.scheme == "https" || (server.scheme == "http" && local) else {
            throw CloakCollectError(
                code: "insecure_server", message: "Cloak must be reached over https (http only on this machine)")
        }
        var base = server.absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        guard let url = URL(string: base + path) else {
            throw CloakCollectError(code: "invalid_path", message: "the path is not a URL path")
        }
        return url
    }

    static func pathComponent(_ text: String) -> String {
        text.addingPercentEncoding(
            withAllowedCharacters: .urlPathAllowed.subtracting(CharacterSet(charactersIn: "/?#")))
            ?? ""
    }

    private func locked<T, Failure: Error>(_ body: () throws(Failure) -> T) throws(Failure) -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }
}
