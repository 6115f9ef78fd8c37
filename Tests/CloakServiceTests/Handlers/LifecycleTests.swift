import CloakTesting
import Foundation
import Testing

/// Issue 22: a token holder's per-record lifetime and metadata.
@Suite(.serialized, .tags(.sockets)) struct LifecycleTests {
    static func create(_ server: TestService, _ item: String, token: String = TestServer.fullToken) throws
        -> RawHTTPClient.Response
    {
        try server.client().request(
            "POST", "/aliases", json: #"{"data":[\#(item)]}"#, headers: IntentTests.bearer(token))
    }

    static func reveal(_ server: TestService, _ alias: String) throws -> [String: Any]? {
        IntentTests.record(
            try server.client().request("GET", "/aliases/\(alias)", headers: IntentTests.bearer(TestServer.fullToken)))
    }

    @Test func ttlAndMetadataBelongToTheRecordAndRevealsShowThem() throws {
        try withTestServer(TestService()) { server throws in
            let created = try Self.create(
                server,
                #"{"value":"4111111111111111","format":"FPE_SIX_T_FOUR","ttl_s":600,"metadata":{"order":"A-17","customer":"c_42"}}"#
            )
            #expect(created.status == 201, "\(created.text)")
            let alias = try #require(IntentTests.alias(created))
            let revealed = try #require(try Self.reveal(server, alias))
            #expect(revealed["metadata"] as? [String: String] == ["order": "A-17", "customer": "c_42"])
            let expires = try #require(IntentTests.seconds(revealed["expires_at"] as? String))
            #expect(abs(expires - Date().timeIntervalSince1970 - 600) < 60)
            // A create never changes an existing record.
            _ = try Self.create(
                server, #"{"value":"4111111111111111","format":"FPE_SIX_T_FOUR","ttl_s":5,"metadata":{"order":"X"}}"#)
            #expect(
                try Self.reveal(server, alias)?["metadata"] as? [String: String] == [
                    "order": "A-17", "customer": "c_42",
                ])
            // A record without either: null and {}.
            let plain = try #require(
                IntentTests.alias(try Self.create(server, #"{"value":"5555555555554444","format":"FPE_SIX_T_FOUR"}"#)))
            let bare = try #require(try Self.reveal(server, plain))
            #expect(bare["expires_at"] is NSNull && (bare["metadata"] as? [String: String]) == [:])
            // Lookup shows them too.
            let found = try server.client().request(
                "POST", "/aliases/lookup", json: #"{"data":[{"value":"4111111111111111"}]}"#,
                headers: IntentTests.bearer(TestServer.fullToken))
            #expect(
                (((found.json?["data"] as? [Any])?.first as? [String: Any])?["metadata"] as? [String: String])?["order"]
                    == "A-17")
        }
    }

    @Test func putChangesClassifiersMetadataAndLifetime() throws {
        try withTestServer(TestService()) { server throws in
            let alias = try #require(IntentTests.alias(try Self.create(server, #"{"value":"v1","format":"UUID"}"#)))
            let put = try server.client().request(
                "PUT", "/aliases/\(alias)",
                json: #"{"data":{"classifiers":["pci"],"metadata":{"k":"v"},"ttl_s":3600}}"#,
                headers: IntentTests.bearer(TestServer.fullToken))
            #expect(put.status == 204, "\(put.text)")
            let revealed = try Self.reveal(server, alias)
            #expect(
                revealed?["classifiers"] as? [String] == ["pci"]
                    && revealed?["metadata"] as? [String: String] == ["k": "v"]
            )
            // The lifetime alone, then: a ttl of 1 s in the first change could lapse before a busy
            // machine's reveal (CI, both cores loaded) and fail the check above.
            let shorten = try server.client().request(
                "PUT", "/aliases/\(alias)", json: #"{"data":{"ttl_s":1}}"#,
                headers: IntentTests.bearer(TestServer.fullToken))
            #expect(shorten.status == 204, "\(shorten.text)")
            var gone = false
            for _ in 0..<100 where !gone {  // ttl_s 1: polled until the record expires
                gone =
                    try server.client().request(
                        "GET", "/aliases/\(alias)", headers: IntentTests.bearer(TestServer.fullToken)
                    ).status == 404
                if !gone { Thread.sleep(forTimeInterval: 0.05) }
            }
            #expect(gone)
        }
    }

    @Test(arguments: [
        #"{"value":"a","metadata":{"card":"4111 1111 1111 1111"}}"#, #"{"value":"a","metadata":{"ssn":"123-45-6789"}}"#,
        #"{"value":"a","metadata":{"x":"４１１１１１１１１１１１１１１１"}}"#, #"{"value":"a","metadata":{"123456789":"k"}}"#,
        #"{"value":"a","metadata":{"x":1}}"#, #"{"value":"a","metadata":[]}"#, #"{"value":"a","ttl_s":0}"#,
        #"{"value":"a","ttl_s":315360001}"#, #"{"value":"a","ttl_s":1.5}"#, #"{"value":"a","ttl_s":"60"}"#,
        #"{"value":"a","metadata":{"k":"\#(String(repeating: "x", count: 257))"}}"#,
    ])
    func badLifetimesAndMetadataAreRefusedWithoutEcho(item: String) throws {
        try withTestServer(TestService()) { server throws in
            let r = try Self.create(server, item)
            #expect(r.status == 400 && r.errorCode == 1002, "\(r.text)")
            #expect(!r.text.contains("4111") && !r.text.contains("6789") && !r.text.contains("１１１"))
        }
    }

    @Test func seventeenKeysOrAnEmptyPutAreRefused() throws {
        try withTestServer(TestService()) { server throws in
            let keys = (0..<17).map { #""k\#($0)":"v""# }.joined(separator: ",")
            #expect(try Self.create(server, #"{"value":"a","metadata":{\#(keys)}}"#).status == 400)
            let alias = try #require(IntentTests.alias(try Self.create(server, #"{"value":"b","format":"UUID"}"#)))
            for body in [#"{"data":{}}"#, #"{"data":{"nope":1}}"#, #"{"data":{"metadata":{"a":"123456789"}}}"#] {
                let r = try server.client().request(
                    "PUT", "/aliases/\(alias)", json: body, headers: IntentTests.bearer(TestServer.fullToken))
                #expect(r.status == 400 && r.errorCode == 1002, "\(body): \(r.text)")
            }
        }
    }
}
