import CloakCrypto
import CloakHTTP
import CloakService
import CloakTesting
import Foundation
import Testing

/// How the forward door refuses (review defects 4 and 8): a connection over the per-address
/// limit is closed and freed, and unknown hosts and unfit routes get one text.
@Suite(.serialized, .tags(.sockets)) struct ForwardDoorRefusalTests {
    /// The review of the fix: a forward-door connection refused by the per-address limit kept
    /// its filter (and socket) alive for good; it is closed now.
    @Test func aForwardDoorConnectionOverThePerAddressLimitIsClosedAndFreed() throws {
        let yaml =
            TestServer.configurationWithTokens + """

                egress:
                  listen: "127.0.0.1:0"
                  routes:
                    - {id: psp, upstream: "https://127.0.0.1:9", allow_private: true}

                """
        try withTestServer(TestServer(yaml: yaml, environment: ["CLOAK_SERVER_MAX_CONNECTIONS_PER_ADDRESS": "1"])) {
            server throws in
            let port = try #require(server.egress?.port)
            // Counted and known to be adopted (answered, and kept open: a 407 to a CONNECT may be retried).
            let held = try RawHTTPClient(port: port)
            try held.send("CONNECT 127.0.0.1:9 HTTP/1.1\r\nHost: 127.0.0.1:9\r\n\r\n")
            #expect(try held.readResponse().status == 407)
            func descriptors() -> Int {
                (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 0
            }
            let before = descriptors()
            for _ in 0..<20 {
                let refused = try RawHTTPClient(port: port, timeout: 5)
                let answer = try refused.readResponse()
                #expect(answer.status == 503, "\(answer.status) \(answer.text)")
                #expect(refused.waitForClose(timeout: 5), "a refused connection stayed open")
            }
            // Every refused socket is closed on the server's side too (polled: closes are a loop turn late).
            var settled = false
            for _ in 0..<100 where !settled {
                settled = descriptors() <= before + 2
                if !settled { Thread.sleep(forTimeInterval: 0.05) }
            }
            #expect(settled, "descriptors grew from \(before) to \(descriptors())")
            _ = held
        }
    }

    @Test func theForwardDoorAnswersOneTextForUnknownHostsAndUnfitRoutes() throws {
        let f = try EgressFixture(
            extraRoutes: """
                    - id: plain
                      upstream: "http://127.0.0.1:9"
                      paths: ["/v1/*"]
                      allow_private: true
                """, scopes: "\"egress:psp\", \"egress:plain\"")
        defer { f.stop() }
        func absolute(_ url: String) throws -> RawHTTPClient.Response {
            let c = try RawHTTPClient(port: f.egressPort)
            return try c.request(
                "POST", url, body: Array("a=1".utf8), headers: [("Proxy-Authorization", f.basicCredentials)])
        }
        let noHost = try absolute("http://127.0.0.1:1/v1/charges")
        let noRoute = try absolute("http://127.0.0.1:9/other")
        #expect(noHost.status == 403 && noRoute.status == 403)
        #expect(
            noHost.json?["error"] as? NSDictionary == noRoute.json?["error"] as? NSDictionary,
            "\(noHost.text) \(noRoute.text)")
    }
}
