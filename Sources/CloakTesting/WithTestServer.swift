/// Something a test starts and must stop whatever happens: a server, a service, an upstream.
package protocol TestStoppable: AnyObject {
    func stop()
}

extension TestServer: TestStoppable {}
extension TestService: TestStoppable {}

/// Runs `body` with what `start` started, and stops it after, however `body` ends: the scoped
/// form of `let server = try TestServer(); defer { server.stop() }` (issue 58).
///
/// ```swift
/// try withTestServer(TestServer()) { server in
///     let client = try RawHTTPClient(port: server.port)
///     #expect(try client.request("GET", "/healthz").status == 200)
/// }
/// ```
package func withTestServer<Server: TestStoppable, Result>(
    _ start: @autoclosure () throws -> Server, _ body: (Server) throws -> Result
) throws -> Result {
    let server = try start()
    defer { server.stop() }
    return try body(server)
}

/// The same, for a body that awaits.
package func withTestServer<Server: TestStoppable, Result>(
    _ start: @autoclosure () throws -> Server, _ body: (Server) async throws -> Result
) async throws -> Result {
    let server = try start()
    defer { server.stop() }
    return try await body(server)
}
