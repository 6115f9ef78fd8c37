import CloakCore
import CloakHTTP
import CloakService
import CloakVault
import Foundation
import Synchronization

/// The real service with a real vault (SQLite file and key file in a temporary folder), called
/// in process: every request runs the API listener's whole middleware chain and its handler,
/// without a socket or a loop (Hummingbird's `.router` test mode beside `.live`).
///
/// Use it for what the service decides (routing, auth, limits, CORS, error bodies, handlers);
/// use ``TestServer`` for what only a wire shows: framing, the server's own headers (`Date`,
/// `X-Request-Id`, `Connection`), timeouts, TLS, tunnels, routes to an upstream.
public final class TestService: Sendable {
    public let service: CloakService
    public let vault: Vault
    public let logs = LogCapture()
    public let directory = TemporaryDirectory()

    public init(yaml: String = TestServer.configurationWithTokens, environment: [String: String] = [:],
                today: CalendarDate? = nil) throws {
        let configuration = try TestServer.configuration(yaml: yaml, environment: environment, threads: 1, in: directory)
        (service, vault) = try TestServer.service(configuration, today: today, logs: logs)
    }

    /// A client whose requests go straight to the service (the same calls as ``RawHTTPClient``).
    public func client(timeout: TimeInterval = 10) throws -> InProcessClient { InProcessClient(service: service) }

    public func stop() {
        service.beginDraining()
        vault.close()
        directory.remove()
    }
}

/// Sends requests to a ``CloakService`` in process, as the server would hand them over: the path
/// split from its query and percent-decoded, the client at 127.0.0.1, a `Host` and, with a body,
/// a `Content-Length` header. Answers are ``RawHTTPClient/Response``s, without the server's own
/// headers.
public struct InProcessClient: Sendable {
    let service: CloakService
    /// The client address the service sees.
    public var remoteAddress = "127.0.0.1"
    private static let counter = Atomic<UInt64>(0)

    public init(service: CloakService) { self.service = service }

    public enum ClientError: Error { case unknownMethod(String) }

    public func request(
        _ method: String, _ path: String, body: [UInt8]? = nil, headers: [(String, String)] = []
    ) throws -> RawHTTPClient.Response {
        guard let verb = HTTPMethod(rawValue: method) else { throw ClientError.unknownMethod(method) }
        var all: [(name: String, value: String)] = [("Host", "127.0.0.1")]
        for (name, value) in headers { all.append((name, value)) }
        if let body { all.append(("Content-Length", String(body.count))) }
        let target = path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let rawPath = String(target[0])
        let id = Self.counter.add(1, ordering: .relaxed).newValue
        var request = HTTPRequest(method: verb, path: rawPath.removingPercentEncoding ?? rawPath,
                                  query: target.count > 1 ? String(target[1]) : nil, headers: all, body: body ?? [],
                                  requestID: "in-process-\(id)")
        request.rawPath = rawPath
        request.remoteAddress = remoteAddress
        let response = service.handle(request)
        return RawHTTPClient.Response(status: response.status, headers: response.headers,
                                      body: verb == .HEAD ? [] : response.body)
    }

    public func request(_ method: String, _ path: String, json: String, headers: [(String, String)] = []) throws
        -> RawHTTPClient.Response
    {
        try request(method, path, body: Array(json.utf8), headers: [("Content-Type", "application/json")] + headers)
    }
}
