import CloakTesting
import Foundation
import Testing

/// Review defect 7: libevent's parser is lenient where a front proxy may not be. On the wire,
/// each of these is answered 400 (1002) and the connection closed, and no request reaches a
/// handler with a framing of libevent's own reading.
@Suite(.tags(.racy, .sockets)) struct StrictFramingTests {
    static let body = #"{"fields":{"card_data.card_cvc":"123"}}"#

    /// Raw requests that evhttp 2.1.12 accepts and a strict peer reads differently.
    static let smuggling: [(String, String)] = [
        (
            "a signed Content-Length",
            "POST /forms/checkout/validate HTTP/1.1\r\nHost: x\r\nContent-Length: +\(body.utf8.count)\r\n\r\n\(body)"
        ),
        (
            "a hex chunk size with 0x",
            "POST /forms/checkout/validate HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0x\(String(body.utf8.count, radix: 16))\r\n\(body)\r\n0\r\n\r\n"
        ),
        (
            "a bare LF head",
            "POST /forms/checkout/validate HTTP/1.1\nHost: x\nContent-Length: \(body.utf8.count)\n\n\(body)"
        ),
        (
            "two Transfer-Encodings",
            "POST /forms/checkout/validate HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: identity\r\nTransfer-Encoding: chunked\r\n\r\n\(String(body.utf8.count, radix: 16))\r\n\(body)\r\n0\r\n\r\n"
        ),
        (
            "a chunk size with a space",
            "POST /forms/checkout/validate HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n \(String(body.utf8.count, radix: 16))\r\n\(body)\r\n0\r\n\r\n"
        ),
        (
            "a body on HEAD",
            "HEAD /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 28\r\n\r\nGET /healthz HTTP/1.1\r\n\r\n"
        ),
    ]

    @Test(arguments: smuggling.map(\.0))
    func leniencyIsRefusedWith400AndAClose(_ name: String) throws {
        try withTestServer(TestServer()) { server throws in
            let raw = try #require(Self.smuggling.first { $0.0 == name }?.1)
            let client = try RawHTTPClient(port: server.port, timeout: 5)
            try client.send(raw)
            // The answer to a HEAD has no body (its length says what a GET would get).
            let isHead = raw.hasPrefix("HEAD ")
            let r = try client.readResponse(hasBody: !isHead)
            #expect(r.status == 400 && (isHead || r.errorCode == 1002), "\(name): \(r.status) \(r.text)")
            #expect(r.header("Connection")?.lowercased() == "close", "\(name)")
            #expect(client.waitForClose(timeout: 5), "\(name): the connection stayed open")
            // Nothing of the request is echoed.
            #expect(!r.text.contains("123") && !r.text.contains("0x"), "\(r.text)")
        }
    }

    @Test func strictRequestsStillPassIncludingChunkedAndPipelined() throws {
        try withTestServer(TestServer()) { server throws in
            let client = try RawHTTPClient(port: server.port, timeout: 5)
            let n = Self.body.utf8.count
            try client.send(
                "POST /forms/checkout/validate HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                    + "\(String(n, radix: 16))\r\n\(Self.body)\r\n0\r\n\r\n"
                    + "POST /forms/checkout/validate HTTP/1.1\r\nHost: x\r\nContent-Length: \(n)\r\n\r\n\(Self.body)"
                    + "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            let statuses = try (0..<3).map { _ in try client.readResponse().status }
            #expect(statuses == [200, 200, 200])
        }
    }

    /// A smuggled request sent while the one before it is with the handler (evhttp reads nothing
    /// then, and the input callback is off): judged when the answer goes out, then refused.
    @Test func aViolationSentDuringTheHandlingOfTheRequestBeforeIsRefused() throws {
        try withTestServer(TestServer()) { server throws in
            let client = try RawHTTPClient(port: server.port, timeout: 5)
            let tokenize = #"{"data":[{"value":"4111111111111111","format":"UUID"}]}"#
            let json = "Content-Type: application/json\r\n"
            try client.send(
                "POST /tokens HTTP/1.1\r\nHost: x\r\n\(json)Content-Length: \(tokenize.utf8.count)\r\n\r\n\(tokenize)")
            try client.send(
                "POST /tokens HTTP/1.1\r\nHost: x\r\n\(json)Content-Length: +\(tokenize.utf8.count)\r\n\r\n\(tokenize)")
            let first = try client.readResponse()
            let second = try client.readResponse()
            #expect(first.status == 201, "\(first.text)")
            #expect(second.status == 400 && second.errorCode == 1002, "\(second.text)")
            #expect(client.waitForClose(timeout: 5))
        }
    }
}
