import CloakTesting
import Foundation
import Testing

/// A request larger than the kernel takes at once, through a real route: the upstream client
/// sends what the socket accepts, keeps the rest and sends it when the socket is writable
/// again. The upstream must get every byte once, in order, and nothing after it.
@Suite(.serialized, .tags(.racy, .sockets)) struct UpstreamWriteTests {
    /// 8,000,000 bytes of numbered lines (`0000000\n` up to `0999999\n`): a piece lost, sent
    /// twice or out of order shows. Loopback's large segments let the kernel take over a
    /// megabyte at once (its send buffer starts at twice ten segments), so it takes this many.
    static let body: [UInt8] = {
        var out = [UInt8](repeating: UInt8(ascii: "\n"), count: 8_000_000)
        for line in 0..<1_000_000 {
            var n = line
            for digit in stride(from: 6, through: 0, by: -1) {
                out[line * 8 + digit] = UInt8(ascii: "0") + UInt8(n % 10)
                n /= 10
            }
        }
        return out
    }()

    @Test func aBodyLargerThanTheSocketBuffersArrivesWhole() throws {
        // A 4 KiB receive buffer at the upstream: most of the 8 MB waits in the client until
        // the socket has room (several sends, each after a write event).
        let upstream = RawUpstream(receiveBuffer: 4096)
        defer { upstream.stop() }
        let yaml = HostileInputTests.routeYAML(upstream.port)
        let larger = yaml.replacingOccurrences(of: "max_body_bytes: 1048576", with: "max_body_bytes: 16777216")
        try #require(larger != yaml)
        try withTestServer(TestServer(yaml: larger)) { server throws in
            let client = try server.client(timeout: 30)
            let r = try client.request("POST", "/proxy/raw", body: Self.body)
            #expect(r.status == 204, "\(r.status) \(r.text)")
            let seen = upstream.bytes
            let head = try #require(seen.firstRange(of: Array("\r\n\r\n".utf8)))
            #expect(String(decoding: seen[..<head.lowerBound], as: UTF8.self).contains("Content-Length: 8000000"))
            #expect(seen.count - head.upperBound == Self.body.count)
            #expect(Array(seen[head.upperBound...]) == Self.body)
            // The connection the long write used is whole: the next request on it is framed as one.
            let next = try client.request("POST", "/proxy/raw", body: Array("{}".utf8))
            #expect(next.status == 204)
            #expect(upstream.text.components(separatedBy: "POST /raw HTTP/1.1").count == 3)
        }
    }
}
