import CloakCore
import CloakHTTP
import CloakService
import CloakVault
import Foundation
import Synchronization

/// The real service with a real vault (SQLite file and key file in a temporary folder), called
/// in process: every request runs the API listener's whole middleware chain and its handler on
/// an event loop of its own, without a socket between client and service (Hummingbird's
/// `.router` test mode beside `.live`). Routes still reach their upstreams from that loop.
///
/// Use it for what the service decides (routing, auth, limits, CORS, error bodies, handlers,
/// routes' transformations); use ``TestServer`` for what only a wire shows: framing, the
/// server's own headers (`Date`, `X-Request-Id`, `Connection`), limits the server enforces
/// before the service (body and header sizes, connections), timeouts, TLS, tunnels.
package final class TestService: Sendable {
    package let service: CloakService
    package let vault: Vault
    package let logs = LogCapture()
    package let directory = TemporaryDirectory()
    /// The loop requests run on.
    package let loop: DetachedLoop

    package init(
        yaml: String = TestServer.configurationWithTokens, environment: [String: String] = [:],
        today: CalendarDate? = nil
    ) throws {
        let configuration = try TestServer.configuration(
            yaml: yaml, environment: environment, threads: 1, in: directory)
        (service, vault) = try TestServer.service(configuration, today: today, logs: logs)
        loop = try DetachedLoop()
    }

    /// A client whose requests go straight to the service (the same calls as ``RawHTTPClient``).
    package func client(timeout: TimeInterval = 10) throws -> InProcessClient {
        InProcessClient(service: service, loop: loop, timeout: timeout)
    }

    package func stop() {
        service.beginDraining()
        loop.shutdown()
        vault.close()
        directory.remove()
    }
}

/// Sends requests to a ``CloakService`` in process, as the server would hand them over: the path
/// split from its query and percent-decoded, the client at 127.0.0.1, a `Host` and, with a body,
/// a `Content-Length` header; on `loop` when given (as the server does), else on the caller's
/// thread. Answers are ``RawHTTPClient/Response``s, without the server's own headers.
package struct InProcessClient: Sendable {
    let service: CloakService
    /// Held, not just its handle: the handle does not keep the loop alive.
    let loop: DetachedLoop?
    /// How long a request may take before ``ClientError/timedOut``.
    let timeout: TimeInterval
    /// The client address the service sees.
    package var remoteAddress = "127.0.0.1"
    private static let counter = Atomic<UInt64>(0)

    package init(service: CloakService, loop: DetachedLoop? = nil, timeout: TimeInterval = 10) {
        self.service = service
        self.loop = loop
        self.timeout = timeout
    }

    package enum ClientError: Error { case unknownMethod(String), timedOut }

    package func request(
        _ method: String, _ path: String, body: [UInt8]? = nil, headers: [(String, String)] = []
    ) throws -> RawHTTPClient.Response {
        guard let verb = HTTPMethod(rawValue: method) else { throw ClientError.unknownMethod(method) }
        var all: [(name: String, value: String)] = [("Host", "127.0.0.1")]
        for (name, value) in headers { all.append((name, value)) }
        if let body { all.append(("Content-Length", String(body.count))) }
        let target = path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let rawPath = String(target[0])
        let id = Self.counter.add(1, ordering: .relaxed).newValue
        var request = HTTPRequest(
            method: verb, path: rawPath.removingPercentEncoding ?? rawPath,
            query: target.count > 1 ? String(target[1]) : nil, headers: all, body: body ?? [],
            requestID: "in-process-\(id)")
        request.rawPath = rawPath
        request.remoteAddress = remoteAddress
        request.loop = loop?.handle
        let response = try answer(request)
        return RawHTTPClient.Response(
            status: response.status, headers: response.headers,
            body: verb == .HEAD ? [] : response.body)
    }

    package func request(_ method: String, _ path: String, json: String, headers: [(String, String)] = []) throws
        -> RawHTTPClient.Response
    {
        try request(method, path, body: Array(json.utf8), headers: [("Content-Type", "application/json")] + headers)
    }

    /// The service's answer to `request`, on the loop when there is one.
    private func answer(_ request: HTTPRequest) throws -> HTTPResponse {
        let box = Mutex<HTTPResponse?>(nil)
        let done = DispatchSemaphore(value: 0)
        let responder = HTTPResponder.collecting { response in
            box.withLock { $0 = response }
            done.signal()
        }
        if let loop {
            loop.handle.execute { [service] in service.handle(request, responder) }
        } else {
            service.handle(request, responder)
        }
        guard done.wait(timeout: .now() + timeout) == .success, let response = box.withLock({ $0 }) else {
            throw ClientError.timedOut
        }
        return response
    }
}
