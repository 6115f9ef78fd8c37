import CloakTesting
import Foundation
import Synchronization
import Testing

@Suite(.tags(.sockets)) struct ConcurrencyTests {
    @Test func manyConcurrentKeepAliveConnectionsAllGetCorrectAnswers() throws {
        try withTestServer(TestServer(threads: 2)) { server throws in
            let connections = 64, requestsEach = 25
            let failures = Mutex<[String]>([])
            let port = server.port
            DispatchQueue.concurrentPerform(iterations: connections) { i in
                do {
                    let client = try RawHTTPClient(port: port)
                    for j in 0..<requestsEach {
                        // Alternate visa and amex so answers cannot be mixed up between connections.
                        let amex = (i + j) % 2 == 0
                        let number = amex ? "378282246310005" : "4111111111111111"
                        let r = try client.request(
                            "POST", "/forms/checkout/validate",
                            json:
                                #"{"fields":{"card_data.card_number":"\#(number)"}}"#)
                        let brand =
                            ((r.json?["fields"] as? [String: Any])?["card_data.card_number"] as? [String: Any])?[
                                "cardBrand"] as? String
                        if r.status != 200 || brand != (amex ? "amex" : "visa") {
                            failures.withLock { $0.append("connection \(i) request \(j): \(r.status) \(brand ?? "-")") }
                        }
                    }
                } catch {
                    failures.withLock { $0.append("connection \(i): \(error)") }
                }
            }
            #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0.prefix(5) })")
            #expect(server.logs.lines.filter { $0.contains(#""msg":"request""#) }.count == connections * requestsEach)
        }
    }

    @Test func shutdownDrainsWhileKeepAliveConnectionsAreOpen() throws {
        let server = try TestServer(environment: ["CLOAK_SERVER_DRAIN_TIMEOUT_S": "5"])
        let idle = try server.client()
        #expect(try idle.request("GET", "/healthz").status == 200)
        let started = Date()
        server.stop()
        let elapsed = Date().timeIntervalSince(started)
        #expect(elapsed < 4, "an idle keep-alive connection held shutdown for \(elapsed) s")
        #expect(idle.waitForClose(timeout: 2))
        #expect(throws: (any Error).self) {
            try RawHTTPClient(port: server.port, timeout: 1).request("GET", "/healthz")
        }
    }
}
