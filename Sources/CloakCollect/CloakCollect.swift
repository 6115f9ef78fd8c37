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
/// A `file` field is a ``CloakFileField`` (``fileField(_:)``): a form holding files is submitted
/// as `multipart/form-data`.
///
/// A card number's state carries the attributes of the BIN it shows (issue 48): the client has no
/// BIN table, so it asks the server for them (`GET /elements/v1/bins/{bin}`, the digits the state
/// shows and no more), once per bin, and calls the field's observer again when they arrive.
///
/// Thread-safe: every field's state is behind one lock; observers are called after it is let go.
public final class CloakCollect: @unchecked Sendable, CustomStringConvertible, CustomReflectable {
    public let server: URL
    public let form: String
    let transport: any CloakTransport
    let lock = NSLock()
    // Guarded by `lock`:
    var schema: BrowserSchema?
    var editors: [FieldEditor] = []
    var focused: Set<Int> = []
    var fields: [Int: CloakField] = [:]
    var observers: [Int: @Sendable (CloakField) -> Void] = [:]
    var fileFields: [Int: CloakFileField] = [:]
    var fileObservers: [Int: @Sendable (CloakFileField) -> Void] = [:]
    /// The files of each file field, by field index.
    var held: [Int: [HeldFile]] = [:]
    var headers: [String: String] = [:]
    /// What the server said of each bin a card number's state showed: its attributes, or nil
    /// when it knows none (issue 48). A bin without an entry was never answered.
    var binAnswers: [String: CardAttributes?] = [:]
    /// The bins whose attributes are being asked for (one request per bin at a time).
    var binsAsked: Set<String> = []

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
            fileFields = [:]
            fileObservers = [:]
            held = [:]
            binAnswers = [:]
        }
    }

    /// The form's field names, in the server's order (empty before ``loadSchema()``).
    public var fieldNames: [String] { locked { schema?.form.fields.map(\.name) ?? [] } }

    /// The field `name`: the same object every time.
    /// - Throws: `schema_not_loaded`, `unknown_field` when the form has no such field, or
    ///   `not_a_text_field` for a `file` field (``fileField(_:)``).
    public func field(_ name: String) throws -> CloakField {
        try locked { () throws(CloakCollectError) -> CloakField in
            guard let schema else {
                throw CloakCollectError(code: "schema_not_loaded", message: "call loadSchema() before making fields")
            }
            guard let index = schema.form.index(of: name) else {
                throw CloakCollectError(code: "unknown_field", message: "the form \(form) has no field \(name)")
            }
            let field = schema.form.fields[index]
            guard field.type != .file else {
                throw CloakCollectError(code: "not_a_text_field", message: "\(name) is a file field: use fileField(_:)")
            }
            if let made = fields[index] { return made }
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

    /// The `file` field `name`: the same object every time.
    /// - Throws: `schema_not_loaded`, `unknown_field` when the form has no such field, or
    ///   `not_a_file_field` for a field of another type (``field(_:)``).
    public func fileField(_ name: String) throws -> CloakFileField {
        try locked { () throws(CloakCollectError) -> CloakFileField in
            guard let schema else {
                throw CloakCollectError(code: "schema_not_loaded", message: "call loadSchema() before making fields")
            }
            guard let index = schema.form.index(of: name) else {
                throw CloakCollectError(code: "unknown_field", message: "the form \(form) has no field \(name)")
            }
            let field = schema.form.fields[index]
            guard field.type == .file else {
                throw CloakCollectError(
                    code: "not_a_file_field", message: "\(name) is a \(field.type.rawValue) field: use field(_:)")
            }
            if let made = fileFields[index] { return made }
            let rules = Self.fileRules(field)
            let made = CloakFileField(
                name: name, index: index,
                configuration: CloakFileFieldConfiguration(
                    name: name, title: schema.presentation[name]?.title ?? name,
                    allowedMediaTypes: rules.types.map(\.rawValue), maxBytes: rules.maxBytes, maxFiles: rules.maxFiles,
                    isRequired: rules.isRequired),
                collect: self)
            fileFields[index] = made
            return made
        }
    }

    /// Every field's state and the form's pre-send check, as the server would answer them: text
    /// fields in `fields`, file fields in `files`.
    public var state: CloakFormState {
        locked {
            guard let schema else { return CloakFormState(isValid: false, fields: [:]) }
            let validation = validationLocked(schema)
            var states: [String: CloakFieldState] = [:]
            var files: [String: CloakFileFieldState] = [:]
            for (i, field) in schema.form.fields.enumerated() {
                if field.type == .file {
                    files[field.name] = fileStateLocked(i, schema)
                } else {
                    states[field.name] = stateLocked(i, validation)
                }
            }
            // A file field has no text: the rule engine's check covers the text fields, the
            // files' own rules the file fields (an invalid file is refused, required or not).
            // A card its `accept` rule refuses is invalid in its state only (the rule engine here
            // has no table): a required-valid-only one is refused as the server refuses it.
            let fileNames = Set(files.keys)
            let isValid =
                validation.requiredMissing.allSatisfy { fileNames.contains($0) }
                && validation.requiredInvalid.allSatisfy { fileNames.contains($0) }
                && files.values.allSatisfy { $0.isValid }
                && !schema.form.fields.contains { $0.isRequiredValidOnly && states[$0.name]?.isValid == false }
            return CloakFormState(isValid: isValid, fields: states, files: files)
        }
    }

    /// Empties every field, the file fields too.
    public func clearAll() {
        let (indices, fileIndices) = locked { (Array(editors.indices), Array(held.keys)) }
        for i in indices { edit(i) { $0.clear() } }
        for i in fileIndices { editFiles(i) { $0.removeAll() } }
    }

    // MARK: Fields (called by CloakField)

    func read<T>(_ index: Int, _ body: (FieldEditor) -> T) -> T? {
        locked { editors.indices.contains(index) ? body(editors[index]) : nil }
    }

    func edit(_ index: Int, _ change: (inout FieldEditor) -> Void) {
        let (notify, bin) = locked { () -> ([(CloakField, @Sendable (CloakField) -> Void)], String?) in
            guard editors.indices.contains(index), let schema else { return ([], nil) }
            change(&editors[index])
            var touched = [index]
            var ask: String?
            // A card's brand decides the lengths of the CVCs linked to it.
            let field = schema.form.fields[index]
            if field.type == .cardNumber {
                let model = schema.form.brands.detect(String(editors[index].raw))
                for (j, other) in schema.form.fields.enumerated()
                where other.type == .cvc && other.cardField == field.name {
                    editors[j].link(to: model)
                    touched.append(j)
                }
                ask = binToAskLocked(index, schema)
            }
            let observed = touched.compactMap { i in fields[i].flatMap { f in observers[i].map { (f, $0) } } }
            return (observed, ask)
        }
        for (field, observer) in notify { observer(field) }
        if let bin { askCardAttributes(of: bin) }
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

    func locked<T, Failure: Error>(_ body: () throws(Failure) -> T) throws(Failure) -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }
}
