import CloakCore
import CloakService
import CloakVault
import Foundation

/// How a test reaches the service (issue 75): ``inProcess`` calls it without a socket
/// (``TestService``), ``live`` serves it on loopback (``TestServer``). Hummingbird's
/// `app.test(.router)` and `app.test(.live)`: one body, either way.
package enum TestMode: String, CaseIterable, Sendable, CustomStringConvertible {
    case inProcess, live
    package var description: String { rawValue }
}

/// What a test body written for both modes may use: a client, the vault, the logs and the
/// service, whichever way it was started.
package protocol TestHost: TestStoppable {
    var service: CloakService { get }
    var vault: Vault { get }
    var logs: LogCapture { get }
    var directory: TemporaryDirectory { get }
    /// A client of the service: a raw socket to a live server, or calls in process.
    func testClient(timeout: TimeInterval) throws -> any HTTPTestClient
}

extension TestServer: TestHost {
    package func testClient(timeout: TimeInterval) throws -> any HTTPTestClient { try client(timeout: timeout) }
}

extension TestService: TestHost {
    package func testClient(timeout: TimeInterval) throws -> any HTTPTestClient { try client(timeout: timeout) }
}

extension TestHost {
    /// A client with the test clients' 10 s timeout.
    package func testClient() throws -> any HTTPTestClient { try testClient(timeout: 10) }
}

/// Runs `body` against the service started in `mode` with `yaml` (and `CLOAK_*` overrides in
/// `environment`), and stops it after, however `body` ends. A suite whose subject is what the
/// service decides runs its bodies `.inProcess`; `@Test(arguments: TestMode.allCases)` runs one
/// body both ways, so the wire and the service are seen to agree.
///
/// ```swift
/// @Test(arguments: TestMode.allCases) func healthzIsUp(mode: TestMode) throws {
///     try withTestService(mode) { host in
///         #expect(try host.testClient().request("GET", "/healthz", body: nil, headers: []).status == 200)
///     }
/// }
/// ```
package func withTestService<Result>(
    _ mode: TestMode, yaml: String = TestServer.configurationWithTokens, environment: [String: String] = [:],
    today: CalendarDate? = nil, _ body: (any TestHost) throws -> Result
) throws -> Result {
    let host: any TestHost =
        switch mode {
        case .inProcess: try TestService(yaml: yaml, environment: environment, today: today)
        case .live: try TestServer(yaml: yaml, environment: environment, today: today)
        }
    defer { host.stop() }
    return try body(host)
}
