import CloakCore
import Foundation

/// Reveals stored values to an app, through a native session its backend minted
/// (`POST /elements/sessions` with `"audience": "native"` and a token holding `aliases:reveal`).
/// The session names the aliases it may show and expires within ten minutes; Cloak checks on
/// every reveal that the minting token may still reveal, and, when the backend bound it, the
/// client's address.
public final class CloakReveal: Sendable {
    public let server: URL
    private let session: String
    private let transport: any CloakTransport

    public init(server: URL, session: String, transport: any CloakTransport = URLSessionTransport()) {
        self.server = server
        self.session = session
        self.transport = transport
    }

    /// `POST /elements/v1/native/reveal`.
    /// - Throws: ``CloakCollectError`` with the server's refusal as its code (`expired`,
    ///   `invalid_session`, `wrong_audience`, `other_client`, `not_in_session`, `token_revoked`,
    ///   `not_found`, else `http_<status>`), or `no_answer`.
    public func reveal(alias: String) async throws -> CloakRevealedValue {
        let url = try CloakCollect.endpoint(server, "/elements/v1/native/reveal")
        let body = JSONWriter.encode(.object([("session", .string(session)), ("alias", .string(alias))]))
        let answer = try await transport.send(
            CloakHTTPRequest(
                method: "POST", url: url, headers: ["Content-Type": "application/json"], body: Data(body)))
        let document = try? JSONParser().parse(Array(answer.body))
        if answer.status == 200, case let .string(value)? = document?["value"] {
            return CloakRevealedValue(value)
        }
        let error = document?["error"]
        let reason = error?["extraInfo"]?["reason"]?.stringValue
        let code = reason ?? (answer.status == 404 ? "not_found" : "http_\(answer.status)")
        throw CloakCollectError(code: code, message: error?["description"]?.stringValue ?? "Cloak refused the reveal")
    }
}

/// A revealed value, for the view layer only: shown masked (`masked(_:)`) or handed to a
/// closure (`withValue(_:)`); its description, debug description and mirror never show it.
public struct CloakRevealedValue: Sendable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    private let value: Sensitive<String>

    init(_ value: String) { self.value = Sensitive(value) }

    /// The value through `pattern`: each `#` shows the value's character in that place, counted
    /// from the end (so `"•••• •••• •••• ####"` shows a card's last four, whatever its length);
    /// every other character is printed as it is.
    public func masked(_ pattern: String) -> String {
        let characters = Array(value.value)
        let shown = pattern.filter { $0 == "#" }.count
        var next = max(characters.count - shown, 0)
        var out = ""
        for p in pattern {
            guard p == "#" else {
                out.append(p)
                continue
            }
            // Past the value's end (a value shorter than the mask shows): nothing.
            if next < characters.count { out.append(characters[next]) }
            next += 1
        }
        return out
    }

    /// Hands the value to `body` (a label setting its text).
    public func withValue<T>(_ body: (String) throws -> T) rethrows -> T { try body(value.value) }

    public var description: String { "CloakRevealedValue(redacted)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: [:]) }
}
