import CloakCore
import CloakCrypto
import CloakHTTP
import CloakTesting
import Foundation

/// A Cloak with egress routes to a real HTTPS upstream (certificates made by `openssl`), and
/// the real clients users point at it: curl and Python's `requests`. On the real server
/// (``TestServer``), with the forward-proxy door of `egress.listen`; ``EgressServiceFixture`` is
/// the same in process, for the transform door alone.
final class EgressFixture {
    let certificates: TestCertificates
    let upstream: TLSUpstream
    let server: TestServer
    static let egressToken = "egress-token-secret"
    static let card = "4111111111111111"

    /// - Parameters:
    ///   - requireClientCertificate: the upstream asks for mutual TLS.
    ///   - clientCertificate: the route presents the test client certificate.
    /// - extraRoutes: more `egress.routes` entries; `PORT` and `CA` stand for the upstream's.
    init(
        requireClientCertificate: Bool = false, clientCertificate: Bool = false, extraRoutes: String = "",
        scopes: String = "\"egress:psp\""
    ) throws {
        certificates = try TestCertificates()
        upstream = try TLSUpstream(certificates: certificates, requireClientCertificate: requireClientCertificate)
        server = try TestServer(
            yaml: Self.yaml(
                upstream: upstream, certificates: certificates, clientCertificate: clientCertificate,
                extraRoutes: extraRoutes, scopes: scopes))
    }

    /// The fixture's configuration: the test tokens, the egress token with `scopes`, and the
    /// `psp` route (plus `extraRoutes`) to `upstream`.
    static func yaml(
        upstream: TLSUpstream, certificates: TestCertificates, clientCertificate: Bool, extraRoutes: String,
        scopes: String
    ) -> String {
        let hex = Digest.sha256(Array(Self.egressToken.utf8)).map { String(format: "%02x", $0) }.joined()
        let client =
            clientCertificate
            ? "      client_cert: {cert: \"\(certificates.clientCertificate)\", key: \"\(certificates.clientKey)\"}\n"
            : ""
        let yaml =
            TestServer.configurationWithTokens.replacingOccurrences(
                of: "  tokens: [", with: "  tokens: [{id: egress, sha256: \"\(hex)\", scopes: [\(scopes)]}, ") + """

                egress:
                  listen: "127.0.0.1:0"
                  routes:
                    - id: psp
                      upstream: "https://127.0.0.1:\(upstream.port)"
                      paths: ["/v1/*"]
                      methods: [POST]
                      request:
                        - {reveal: {form: ["card[number]", "card[cvc]"]}}
                        - {reveal: {json: ["$.source.number"]}}
                        - {reveal: {header: ["X-Card-Number"]}}
                      response:
                        - {redact: {json: ["$..number"], format: FPE_SIX_T_FOUR, storage: PERSISTENT}}
                        - {redact: {form: ["card[number]"], format: FPE_SIX_T_FOUR, storage: PERSISTENT}}
                        - {redact: {form: ["card[cvc]"], format: UUID, storage: VOLATILE}}
                      ca_file: "\(certificates.caFile)"
                      allow_private: true
                      max_aliases: 3
                \(client)\(extraRoutes.replacingOccurrences(of: "PORT", with: String(upstream.port)).replacingOccurrences(of: "\"CA\"", with: "\"\(certificates.caFile)\""))
                """
        return yaml
    }

    var egressPort: Int { server.egress?.port ?? 0 }
    var basicCredentials: String { Self.egressBasicCredentials }
    /// `Proxy-Authorization` for the egress token, Basic with its id as the user name.
    static var egressBasicCredentials: String { "Basic " + Data("egress:\(egressToken)".utf8).base64EncodedString() }

    /// A stored card's alias (FPE_SIX_T_FOUR, made through the Vault API).
    func alias(_ value: String = EgressFixture.card, format: String = "FPE_SIX_T_FOUR") throws -> String {
        try Self.alias(value, format: format, via: server.client())
    }

    /// `value`'s alias in `format`, stored through the Vault API by `client`.
    static func alias(_ value: String, format: String, via client: some HTTPTestClient) throws -> String {
        let r = try client.request(
            "POST", "/aliases", json: #"{"data":[{"value":"\#(value)","format":"\#(format)"}]}"#,
            headers: [("Authorization", "Bearer \(TestServer.fullToken)")])
        let data = r.json?["data"] as? [[String: Any]]
        guard let alias = (data?.first?["aliases"] as? [[String: Any]])?.first?["alias"] as? String else {
            throw CocoaError(.coderValueNotFound)
        }
        return alias
    }

    func stop() {
        server.stop()
        upstream.stop()
        certificates.remove()
    }

    /// Runs a command; its standard output, error and exit status.
    static func run(_ executable: String, _ arguments: [String]) throws -> (out: String, err: String, status: Int32) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = [executable] + arguments
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        let o = out.fileHandleForReading.readDataToEndOfFile()
        let e = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (String(decoding: o, as: UTF8.self), String(decoding: e, as: UTF8.self), p.terminationStatus)
    }

    /// A Python 3 that has `requests` (Debian's python3-requests, or the one on PATH).
    static let pythonWithRequests: String? = {
        for candidate in ["/usr/bin/python3", "python3"] {
            if let r = try? run(candidate, ["-c", "import requests"]), r.status == 0 { return candidate }
        }
        return nil
    }()
}

/// ``EgressFixture``'s Cloak, configuration and HTTPS upstream, with the service called in
/// process (``TestService``): for the transform door (`/egress/{route}/…`), which reaches the
/// upstream from the request's loop as on the wire. There is no listener, so no forward-proxy
/// door: tests of that door, of tunnels and of real clients (curl, `requests`) use
/// ``EgressFixture``.
final class EgressServiceFixture {
    let certificates: TestCertificates
    let upstream: TLSUpstream
    let server: TestService

    /// The parameters of ``EgressFixture/init(requireClientCertificate:clientCertificate:extraRoutes:scopes:)``.
    init(
        requireClientCertificate: Bool = false, clientCertificate: Bool = false, extraRoutes: String = "",
        scopes: String = "\"egress:psp\"", environment: [String: String] = [:]
    ) throws {
        certificates = try TestCertificates()
        upstream = try TLSUpstream(certificates: certificates, requireClientCertificate: requireClientCertificate)
        server = try TestService(
            yaml: EgressFixture.yaml(
                upstream: upstream, certificates: certificates, clientCertificate: clientCertificate,
                extraRoutes: extraRoutes, scopes: scopes), environment: environment)
    }

    var basicCredentials: String { EgressFixture.egressBasicCredentials }

    /// A stored card's alias (FPE_SIX_T_FOUR, made through the Vault API).
    func alias(_ value: String = EgressFixture.card, format: String = "FPE_SIX_T_FOUR") throws -> String {
        try EgressFixture.alias(value, format: format, via: server.client())
    }

    func stop() {
        server.stop()
        upstream.stop()
        certificates.remove()
    }
}
