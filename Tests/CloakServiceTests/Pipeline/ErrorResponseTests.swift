import CloakTesting
import Foundation
import Testing

/// Every failure is a VGSError body with the right code and status; hostile input never crashes,
/// hangs or gets a partial answer.
@Suite(.tags(.sockets)) struct ErrorResponseTests {
    static func expectError(
        _ r: RawHTTPClient.Response, status: Int, code: Int, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(r.status == status, sourceLocation: sourceLocation)
        #expect(r.errorCode == code, "\(r.text)", sourceLocation: sourceLocation)
        let error = r.json?["error"] as? [String: Any]
        #expect(error?["domain"] as? String == "vgscollect.sdk", sourceLocation: sourceLocation)
        #expect(error?["type"] is String, sourceLocation: sourceLocation)
        #expect(error?["key"] is String, sourceLocation: sourceLocation)
        #expect(error?["description"] is String, sourceLocation: sourceLocation)
        #expect(error?["extraInfo"] is [String: Any], sourceLocation: sourceLocation)
    }

    static let malformedBodies: [(String, [UInt8])] = [
        ("not JSON", Array("card=4111111111111111".utf8)),
        ("empty", []),
        ("array", Array("[1,2]".utf8)),
        ("string", Array("\"4111111111111111\"".utf8)),
        ("no fields", Array("{}".utf8)),
        ("fields not object", Array(#"{"fields":[]}"#.utf8)),
        ("number value", Array(#"{"fields":{"card_data.card_number":4111111111111111}}"#.utf8)),
        ("null value", Array(#"{"fields":{"card_data.card_number":null}}"#.utf8)),
        ("unknown field", Array(#"{"fields":{"card":"4111111111111111"}}"#.utf8)),
        ("duplicate field", Array(#"{"fields":{"customer.ssn":"123456789","customer.ssn":"987654321"}}"#.utf8)),
        ("unknown member", Array(#"{"fields":{},"card":"4111111111111111"}"#.utf8)),
        ("bad policy", Array(#"{"fields":{},"options":{"fieldNameMappingPolicy":"xml"}}"#.utf8)),
        ("truncated JSON", Array(#"{"fields":{"card_data.card_number":"4111"#.utf8)),
        ("trailing garbage", Array(#"{"fields":{}} x"#.utf8)),
        ("invalid UTF-8", Array(#"{"fields":{"card_data.card_holder":""#.utf8) + [0xC3, 0x28] + Array(#""}}"#.utf8)),
        ("lone surrogate", Array(#"{"fields":{"card_data.card_holder":"\ud800"}}"#.utf8)),
        ("deep nesting", Array(String(repeating: "[", count: 10_000).utf8)),
        (
            "deep object nesting",
            Array((String(repeating: #"{"a":"#, count: 5_000) + "1" + String(repeating: "}", count: 5_000)).utf8)
        ),
    ]

    @Test(arguments: malformedBodies.indices)
    func malformedBodiesGet1002(index: Int) throws {
        let (name, body) = Self.malformedBodies[index]
        try withTestServer(TestService()) { server throws in
            let r = try server.client().request("POST", "/forms/checkout/validate", body: body)
            Self.expectError(r, status: 400, code: 1002)
            #expect(!r.text.contains("4111111111111111"), "\(name) echoed a card number")
            #expect(!r.text.contains("987654321"), "\(name) echoed a value")
        }
    }

    @Test func tenThousandFieldsGetAClear1002() throws {
        try withTestServer(TestService()) { server throws in
            let members = (0..<10_000).map { #""f\#($0)":"v""# }.joined(separator: ",")
            let r = try server.client().request("POST", "/forms/checkout/validate", json: #"{"fields":{\#(members)}}"#)
            Self.expectError(r, status: 400, code: 1002)
        }
    }

    @Test func unknownFormAndUnknownPathGet1404() throws {
        try withTestServer(TestService()) { server throws in
            let client = try server.client()
            Self.expectError(try client.request("POST", "/forms/nope/validate", json: "{}"), status: 404, code: 1404)
            Self.expectError(try client.request("GET", "/nothing/here"), status: 404, code: 1404)
        }
    }

    @Test(arguments: ["GET", "PUT", "DELETE", "PATCH", "OPTIONS"])
    func wrongMethodsGet405WithAllow(method: String) throws {
        try withTestServer(TestService()) { server throws in
            let r = try server.client().request(method, "/forms/checkout/validate", body: method == "GET" ? nil : [])
            Self.expectError(r, status: 405, code: 1405)
            #expect(r.header("Allow") == "POST")
        }
    }

    @Test func bodyJustOverTheLimitGets413With1003() throws {
        try withTestServer(TestServer(environment: ["CLOAK_SERVER_MAX_BODY_BYTES": "4096"])) { server throws in
            let padding = String(repeating: " ", count: 5000)
            let r = try server.client().request("POST", "/forms/checkout/validate", json: #"{"fields":{}\#(padding)}"#)
            Self.expectError(r, status: 413, code: 1003)
        }
    }

    @Test func bodyFarOverTheLimitGets413AndTheServerStaysUp() throws {
        try withTestServer(TestServer(environment: ["CLOAK_SERVER_MAX_BODY_BYTES": "4096"])) { server throws in
            // Past twice the limit evhttp refuses on its own (lingering close: it discards the body
            // as it arrives, so the client still sees the 413 rather than a reset).
            let r = try server.client().request(
                "POST", "/forms/checkout/validate", body: [UInt8](repeating: 0x20, count: 5_000_000))
            #expect(r.status == 413)
            #expect(try server.client().request("GET", "/healthz").status == 200)
        }
    }

    @Test func conflictingContentLengthsGet400() throws {
        try withTestServer(TestServer()) { server throws in
            let client = try server.client()
            try client.send(
                "POST /forms/checkout/validate HTTP/1.1\r\nHost: x\r\nContent-Length: 13\r\nContent-Length: 12\r\n\r\n{\"fields\":{}}"
            )
            let r = try client.readResponse()
            Self.expectError(r, status: 400, code: 1002)
            #expect(r.header("Connection") == "close")
        }
    }

    @Test func truncatedBodyIsDroppedAfterTheIdleTimeoutAndTheServerStaysUp() throws {
        try withTestServer(TestServer(environment: ["CLOAK_SERVER_IDLE_TIMEOUT_S": "1"])) { server throws in
            let client = try server.client(timeout: 0.5)
            try client.send(
                "POST /forms/checkout/validate HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"fields\":")
            #expect(client.waitForClose(timeout: 5))
            // A client that hangs up mid-body does not hurt the next one either.
            let quitter = try server.client()
            try quitter.send("POST /forms/checkout/validate HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
            _ = quitter
            #expect(try server.client().request("GET", "/healthz").status == 200)
        }
    }

    @Test func oversizedHeadersAreRefused() throws {
        try withTestServer(TestServer(environment: ["CLOAK_SERVER_MAX_HEADER_BYTES": "2048"])) { server throws in
            let r = try server.client().request(
                "GET", "/healthz", headers: [("X-Big", String(repeating: "a", count: 8000))])
            // RFC 6585 5: 431 Request Header Fields Too Large (evhttp answered 400).
            #expect(r.status == 431 && r.errorCode == 1002)
            #expect(try server.client().request("GET", "/healthz").status == 200)
        }
    }

    @Test func connectionsPastTheLimitGet503() throws {
        try withTestServer(TestServer(environment: ["CLOAK_SERVER_MAX_CONNECTIONS": "2"], threads: 1)) {
            server throws in
            let a = try server.client(), b = try server.client(), c = try server.client()
            #expect(try a.request("GET", "/healthz").status == 200)
            #expect(try b.request("GET", "/healthz").status == 200)
            let refused = try c.request("GET", "/healthz")
            Self.expectError(refused, status: 503, code: 1503)
            #expect(c.waitForClose(timeout: 5))
            // Keep-alive connections within the limit keep working.
            #expect(try a.request("GET", "/healthz").status == 200)
        }
    }
}
