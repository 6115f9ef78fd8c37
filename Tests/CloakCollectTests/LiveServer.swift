import CloakCollect
import CloakTesting
import Foundation

/// The real server (libevent, a SQLite vault) with `elements.native` on, the test tokens, the
/// browser parity form (one field of each text type) and a form with a file field (`documents`, issue
/// 47) beside the shipped forms.
enum LiveServer {
    static let parity = """
        forms:
          parity:
            fields:
              - {name: card, type: cardNumber}
              - {name: cvc, type: cvc}
              - {name: exp, type: expDate}
              - {name: ssn, type: ssn}
              - {name: date, type: date}
              - {name: name, type: cardHolderName}
              - {name: identity_name, type: none, validation: [{pattern: "^[\\\\p{L} .'-]+$"}]}
          documents:
            fields:
              - {name: kyc.full_name, type: none}
              - name: kyc.document
                type: file
                max_bytes: 1048576
                types: [image/png, application/pdf]
                max_files: 2
                required: false
        """

    /// The shipped configuration with the test forms and no tokens: what a ``SchemaStub`` serves.
    static var stubConfiguration: String {
        TestServer.shippedConfiguration.replacingOccurrences(of: "\nforms:\n", with: "\n" + parity + "\n")
    }

    /// - Parameter web: pages may embed the frames (`elements.allowed_origins` names one).
    static func start(native: Bool = true, web: Bool = true) throws -> TestServer {
        var yaml = TestServer.configurationWithTokens.replacingOccurrences(
            of: "\nforms:\n", with: "\n" + parity + "\n")
        if native { yaml = yaml.replacingOccurrences(of: "  native: false", with: "  native: true") }
        if !web {
            yaml = yaml.replacingOccurrences(
                of: #"allowed_origins: ["http://localhost:8000"]"#, with: "allowed_origins: []")
        }
        return try TestServer(yaml: yaml)
    }

    static func url(_ server: TestServer) -> URL { URL(string: "http://127.0.0.1:\(server.port)")! }

    /// The inputs the browser parity test types (Tests/Fixtures/collect-cases.json), by kind.
    /// (Its `maskEdits` member is a table of edits: ``MaskEditTable``.)
    static let cases: [String: [String]] = {
        let path = TestServer.repositoryRoot.appendingPathComponent("Tests/Fixtures/collect-cases.json")
        guard let data = try? Data(contentsOf: path),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return [:] }
        return object.compactMapValues { $0 as? [String] }
    }()

    /// The server's field states in a `/validate` answer.
    static func states(_ answer: CloakResponse) throws -> (isValid: Bool, fields: [String: CloakFieldState]) {
        struct Answer: Decodable {
            let isValid: Bool
            let fields: [String: CloakFieldState]
        }
        let decoded = try JSONDecoder().decode(Answer.self, from: answer.body)
        return (decoded.isValid, decoded.fields)
    }
}
