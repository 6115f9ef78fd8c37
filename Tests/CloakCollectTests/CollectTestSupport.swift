import CloakCollect
import CloakCore
import CloakService
import CloakTesting
import Foundation

/// A transport that answers the schema of a form of the shipped configuration (as
/// `GET /elements/v1/forms/{form}` does) and records every other request: the editing tables
/// need no network.
final class SchemaStub: CloakTransport, @unchecked Sendable {
    let configuration: ServiceConfiguration
    private let lock = NSLock()
    private var sent: [CloakHTTPRequest] = []

    init(yaml: String = TestServer.shippedConfiguration) throws {
        configuration = try ServiceConfiguration.parse(yaml: yaml, environment: [:])
    }

    var requests: [CloakHTTPRequest] { lock.withLock { sent } }

    func send(_ request: CloakHTTPRequest) async throws -> CloakResponse {
        lock.withLock { sent.append(request) }
        let path = request.url.path
        if request.method == "GET", path.hasPrefix("/elements/v1/forms/"),
            let form = configuration.forms[String(path.dropFirst("/elements/v1/forms/".count))]
        {
            let today = CalendarDate(year: 2026, month: 11, day: 24)!
            return CloakResponse(status: 200, body: Data(JSONWriter.encode(form.browserSchema(today: today))))
        }
        return CloakResponse(status: 404, body: Data())
    }

    /// A collector of `form` with its schema loaded.
    static func collect(_ form: String) async throws -> (CloakCollect, SchemaStub) {
        let stub = try SchemaStub()
        let collect = CloakCollect(server: URL(string: "https://cloak.example")!, form: form, transport: stub)
        try await collect.loadSchema()
        return (collect, stub)
    }
}

/// One edit of a table: the range of the shown text (UTF-16) and what replaces it, then the
/// text and caret expected after it.
struct Edit: Sendable, CustomStringConvertible {
    let range: Range<Int>
    let text: String
    let shown: String
    let caret: Int

    init(_ range: Range<Int>, _ text: String, _ shown: String, _ caret: Int) {
        self.range = range
        self.text = text
        self.shown = shown
        self.caret = caret
    }

    /// Typing `text` at the caret.
    static func type(at offset: Int, _ text: String, _ shown: String, _ caret: Int) -> Edit {
        Edit(offset..<offset, text, shown, caret)
    }

    /// A backspace over `range`.
    static func delete(_ range: Range<Int>, _ shown: String, _ caret: Int) -> Edit { Edit(range, "", shown, caret) }

    var description: String { "replace \(range) with \(text.debugDescription)" }
}

/// The fixture's `maskEdits` table (Tests/Fixtures/collect-cases.json, issue 44): edits of the
/// shipped checkout form's masked `billing.phone`, with the text and caret after each. CloakCore
/// (MaskEditingTests) and Cloak Elements (Tests/Browser) run the same cases.
struct MaskEditTable: Decodable, Sendable {
    struct Position: Decodable, Sendable, Equatable {
        let literal: String?
        let regex: String?
    }

    struct Transform: Decodable, Sendable {
        let matcher: String
        let replacement: String
    }

    struct Step: Decodable, Sendable {
        let range: [Int]
        let text: String
        let shown: String
        let caret: Int
    }

    struct Case: Decodable, Sendable, CustomStringConvertible {
        let what: String
        let edits: [Step]
        var description: String { what }

        /// The edits as the editing tables write them.
        var steps: [Edit] {
            edits.map { step in
                let lower = step.range.first ?? 0
                return Edit(lower..<max(lower, step.range.last ?? lower), step.text, step.shown, step.caret)
            }
        }
    }

    let form: String
    let field: String
    let mask: [Position]
    let transform: Transform
    let cases: [Case]

    static let shared: MaskEditTable? = {
        struct File: Decodable { let maskEdits: MaskEditTable }
        let path = TestServer.repositoryRoot.appendingPathComponent("Tests/Fixtures/collect-cases.json")
        guard let data = try? Data(contentsOf: path) else { return nil }
        return try? JSONDecoder().decode(File.self, from: data).maskEdits
    }()

    /// Whether the table's mask and transform are the shipped field's (config/cloak.yaml).
    func isTheShippedField() throws -> Bool {
        let configuration = try SchemaStub().configuration
        guard let schema = configuration.forms[form]?.fields.first(where: { $0.name == field }),
            let shipped = schema.mask, let shippedTransform = schema.transform
        else { return false }
        let positions = shipped.positions.map { position -> Position in
            switch position {
            case let .literal(c): return Position(literal: String(c), regex: nil)
            case let .pattern(p): return Position(literal: nil, regex: p.source)
            }
        }
        return positions == mask && shippedTransform.matcher.source == transform.matcher
            && shippedTransform.replacement == transform.replacement
    }
}
