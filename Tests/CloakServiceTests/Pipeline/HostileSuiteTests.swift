import CloakTesting
import Foundation
import Testing

/// Every client-controlled input in its malformed, oversized and hostile forms, sent to every
/// endpoint that reads it, against one server: each answer is a clear refusal (a VGSError body,
/// or libevent's own 400/413 page for heads and bodies past its hard caps), the server still
/// serves afterwards, and no submitted value reaches the captured logs.
@Suite(.tags(.sockets)) struct HostileSuiteTests {
    /// A value that must never be logged or echoed: a card number, in several spellings.
    static let secret = "4111111111111111"
    static let secretSpellings = ["4111111111111111", "4111 1111 1111 1111", "4111-1111-1111-1111", "4111%201111"]

    static let bodies: [(String, [UInt8])] = [
        ("not JSON", Array("card=\(secret)".utf8)),
        ("invalid UTF-8", Array(#"{"data":[{"value":""#.utf8) + [0xFF, 0xFE] + Array(#""}]}"#.utf8)),
        ("duplicate member", Array(#"{"data":[{"value":"\#(secret)","value":"x"}]}"#.utf8)),
        ("duplicate nested", Array(#"{"fields":{},"extraData":{"a":{"b":"\#(secret)","b":"1"}}}"#.utf8)),
        ("deep", Array(String(repeating: "[", count: 100_000).utf8)),
        (
            "huge string",
            Array(#"{"data":[{"value":""#.utf8) + [UInt8](repeating: 0x37, count: 900_000) + Array(#""}]}"#.utf8)
        ),
        (
            "many items",
            Array(
                ("{\"data\":[" + Array(repeating: #"{"value":"\#(secret)"}"#, count: 5_000).joined(separator: ",")
                    + "]}").utf8)
        ),
        (
            "long FPE value",
            Array(
                #"{"data":[{"value":"\#(String(repeating: "4", count: 4096))","format":"NUM_LENGTH_PRESERVING"}]}"#.utf8
            )
        ),
        ("NUL in value", Array(#"{"data":[{"value":"\u0000\#(secret)"}],"x":1}"#.utf8)),
        ("numbers as strings", Array(#"{"data":[{"value":4111111111111111}]}"#.utf8)),
    ]

    static let endpoints: [(String, String, [(String, String)])] = [
        ("POST", "/tokens", []),
        ("POST", "/aliases", [("Authorization", "Bearer \(TestServer.fullToken)")]),
        ("POST", "/forms/checkout/validate", []),
        ("POST", "/forms/checkout/tokens", []),
        ("POST", "/forms/checkout/send", []),
        ("PUT", "/aliases/tok_sandbox_x", [("Authorization", "Bearer \(TestServer.fullToken)")]),
    ]

    static let heads: [(String, String)] = [
        ("token with a card", "GET /aliases/\(secret) HTTP/1.1\r\nAuthorization: Bearer \(secret)\r\n\r\n"),
        ("request id with a card", "GET /healthz HTTP/1.1\r\nX-Request-Id: \(secret)\r\n\r\n"),
        ("conflicting lengths", "POST /tokens HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}"),
        (
            "header name with space",
            "POST /tokens HTTP/1.1\r\nContent-Type : application/json\r\nContent-Length: 2\r\n\r\n{}"
        ),
        ("oversized head", "GET /healthz HTTP/1.1\r\nX-Big: \(String(repeating: "a", count: 40_000))\r\n\r\n"),
        (
            "encoded NUL in path",
            "GET /aliases/tok%00\(secret) HTTP/1.1\r\nAuthorization: Bearer \(TestServer.fullToken)\r\n\r\n"
        ),
        ("card in path", "GET /forms/\(secret)/validate HTTP/1.1\r\n\r\n"),
        ("dot segments", "GET /proxy/../aliases HTTP/1.1\r\n\r\n"),
        (
            "bad query encoding",
            "GET /aliases?q=%zz%\(secret) HTTP/1.1\r\nAuthorization: Bearer \(TestServer.fullToken)\r\n\r\n"
        ),
        (
            "too many aliases",
            "GET /aliases?q=\(Array(repeating: "a", count: 500).joined(separator: ",")) HTTP/1.1\r\nAuthorization: Bearer \(TestServer.fullToken)\r\n\r\n"
        ),
        ("unknown method", "BREW /tokens HTTP/1.1\r\n\r\n"),
    ]

    @Test func everyHostileInputIsRefusedCleanlyAndLeavesNoTrace() throws {
        try withTestServer(TestServer()) { server throws in
            for (method, path, headers) in Self.endpoints {
                for (name, body) in Self.bodies {
                    let r: RawHTTPClient.Response
                    do { r = try server.client(timeout: 20).request(method, path, body: body, headers: headers) } catch
                    {
                        Issue.record("\(method) \(path) \(name): \(error)")
                        continue
                    }
                    #expect((400...499).contains(r.status), "\(method) \(path) \(name): \(r.status)")
                    if r.header("Content-Type") == "application/json" {
                        #expect(r.errorCode != nil, "\(method) \(path) \(name): \(r.text.prefix(200))")
                    }
                    #expect(!r.text.contains(Self.secret), "\(method) \(path) \(name) echoed the value")
                }
            }
            for (name, head) in Self.heads {
                let client = try server.client(timeout: 20)
                try client.send(head)
                let r: RawHTTPClient.Response
                do { r = try client.readResponse() } catch {
                    Issue.record("\(name): \(error)")
                    continue
                }
                #expect(r.status != 500 && r.status != 200 || name == "request id with a card", "\(name): \(r.status)")
                #expect(!r.text.contains(Self.secret), "\(name) echoed the value")
                #expect(r.header("X-Request-Id") != Self.secret)
            }
            // Still serving, and nothing of the above in the logs.
            #expect(try server.client().request("GET", "/healthz").status == 200)
            let log = server.logs.text
            for spelling in Self.secretSpellings { #expect(!log.contains(spelling), "the log holds \(spelling)") }
            #expect(!log.contains(TestServer.fullToken))
        }
    }
}
