import CloakTesting
import Foundation
import Testing

/// What one client connection can do to the server without a token (an attacker's read of the
/// server side, over the wire against the real server): fill its memory by pipelining without
/// reading, smuggle a request behind a CONNECT evhttp refused, or desynchronise a client with a
/// HEAD answer's body.
@Suite(.tags(.racy, .sockets)) struct ConnectionAbuseTests {
    /// Pipelined requests sent as fast as the server takes them, with a 4 KiB receive buffer
    /// and no answer read: once the answers back up, the server must stop reading (TCP then
    /// pushes back and the sender blocks), not buffer the rest. Returns the bytes the server
    /// took before sending blocked for two seconds, or `cap` if it never did.
    static func bytesTakenWithoutReading(port: Int, cap: Int) -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var small: Int32 = 4096
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<Int32>.size))
        guard LoopbackSocket.connect(fd, to: port) else { return -1 }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        let chunk = Array(String(repeating: "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", count: 2000).utf8)
        var taken = 0
        while taken < cap {
            let n = chunk.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n > 0 {
                taken += n
                continue
            }
            guard n < 0, errno == EAGAIN || errno == EWOULDBLOCK else { return taken }
            var waiting = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            if poll(&waiting, 1, 2000) == 0 { return taken }  // blocked: the server stopped reading
        }
        return taken
    }

    @Test func pipeliningWithoutReadingTheAnswersIsBounded() throws {
        try withTestServer(TestServer()) { server throws in
            let cap = 512 << 20
            let taken = Self.bytesTakenWithoutReading(port: server.port, cap: cap)
            #expect(taken > 0 && taken < 64 << 20, "the server took \(taken >> 20) MiB without the client reading")
            // The server serves others meanwhile, and afterwards.
            #expect(try server.client().request("GET", "/healthz").status == 200)
        }
    }

    /// evhttp answers a CONNECT whose target it cannot parse with its own 400 and keeps the
    /// connection (it never closes after a CONNECT), then reads the rest of that head as new
    /// requests: the framing scan must refuse the CONNECT itself.
    @Test(arguments: [
        "CONNECT [x HTTP/1.1\r\nGET /healthz?a:b HTTP/1.1\r\nHost: x\r\n\r\n",
        "CONNECT a:b:c HTTP/1.1\r\nGET /healthz?a:b HTTP/1.1\r\nHost: x\r\n\r\n",
        "CONNECT %zz:1 HTTP/1.1\r\nGET /healthz?a:b HTTP/1.1\r\nHost: x\r\n\r\n",
        "CONNECT a.example:443 HTTP/1.1\r\nHost: a.example:443\r\n\r\n",
    ])
    func aConnectOnTheAPIListenerIsRefusedAndClosed(raw: String) throws {
        try withTestServer(TestServer()) { server throws in
            let client = try RawHTTPClient(port: server.port, timeout: 5)
            try client.send(raw)
            var statuses: [Int] = []
            while let r = try? client.readResponse() { statuses.append(r.status) }
            #expect(!statuses.contains(200), "\(statuses)")
            #expect(statuses.allSatisfy { $0 == 400 }, "\(statuses)")
            #expect(client.waitForClose(timeout: 5))
            let served = server.logs.text.split(separator: "\n").filter {
                $0.contains(#""path":"/healthz""#) && $0.contains(#""status":200"#)
            }
            #expect(served.isEmpty, "a smuggled request reached its handler: \(served)")
        }
    }

    /// Two HEADs pipelined: each answer is a head alone, so the second is read where it starts.
    @Test func aHeadAnswerHasNoBodyAndTheNextAnswerFollowsIt() throws {
        try withTestServer(TestServer()) { server throws in
            let client = try RawHTTPClient(port: server.port, timeout: 5)
            try client.send("HEAD /nope HTTP/1.1\r\nHost: x\r\n\r\nHEAD /nope HTTP/1.1\r\nHost: x\r\n\r\n")
            let first = try client.readResponse(hasBody: false)
            let second = try client.readResponse(hasBody: false)
            #expect(first.status == 404 && second.status == 404)
            #expect(Int(first.header("Content-Length") ?? "") ?? 0 > 0, "a HEAD gets the length a GET would")
            try client.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try client.readResponse().status == 200)
        }
    }
}
