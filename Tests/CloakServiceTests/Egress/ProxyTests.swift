import CloakHTTP
import CloakTesting
import Foundation
import Synchronization
import Testing

/// `ANY /proxy/{path}` against real upstreams on loopback: an evhttp server, a socket that
/// resets, a port nobody listens on, and `openssl s_server` with certificates made here.
@Suite(.serialized, .tags(.sockets)) struct ProxyTests {
    /// An upstream that records what it receives and answers as the request asks.
    final class Recorder: Sendable {
        private let requests = Mutex<[HTTPRequest]>([])
        func append(_ r: HTTPRequest) { requests.withLock { $0.append(r) } }
        func withLock<T>(_ body: ([HTTPRequest]) -> T) -> T { requests.withLock { body($0) } }
    }

    final class Upstream: Sendable {
        let server: HTTPServer
        let seen = Recorder()

        init() throws {
            let seen = self.seen
            server = try HTTPServer(
                configuration: .init(port: 0, threads: 1, drainTimeoutSeconds: 0.5),
                deferredHandler: { request, responder in
                    seen.append(request)
                    if request.path.hasPrefix("/never") { return }  // never answers
                    let status = Int(request.header("X-Want-Status") ?? "") ?? 201
                    responder.respond(
                        HTTPResponse(
                            status: status, headers: [("X-Upstream", "yes"), ("Content-Type", "text/plain")],
                            body: Array("upstream saw \(request.method.rawValue) \(request.path)".utf8)))
                })
            server.start()
        }
    }

    /// Accepts connections and closes them at once with a reset.
    final class Resetter: @unchecked Sendable {
        let fd: Int32
        let port: Int
        init() {
            let (fd, port) = LoopbackSocket.listening()
            self.fd = fd
            self.port = port
            Thread {
                while true {
                    let c = accept(fd, nil, nil)
                    if c < 0 { return }
                    var l = linger(l_onoff: 1, l_linger: 0)
                    setsockopt(c, SOL_SOCKET, SO_LINGER, &l, socklen_t(MemoryLayout<linger>.size))
                    close(c)
                }
            }.start()
        }
        func stop() { shutdown(fd, Int32(SHUT_RDWR)); close(fd) }
    }

    static let ids = (0..<8).map { _ in UUID().uuidString.lowercased() }

    /// Runs `body` with Cloak in front of a recording upstream and a resetting socket, called in
    /// process (the routes still reach the upstreams from the request's loop).
    func withProxyService(_ body: (TestService, Upstream) throws -> Void) throws {
        let upstream = try Upstream()
        let resetter = Resetter()
        defer { upstream.server.shutdown(); resetter.stop() }
        try withTestServer(
            TestService(yaml: Self.configuration(upstream: upstream.server.port, resetter: resetter.port))
        ) { server throws in
            try body(server, upstream)
        }
    }

    /// The same on the real server, for what only the wire shows: clients that hang up or keep
    /// connections open, hostile request targets, concurrent connections.
    func withProxyServer(_ body: (TestServer, Upstream) throws -> Void) throws {
        let upstream = try Upstream()
        let resetter = Resetter()
        defer { upstream.server.shutdown(); resetter.stop() }
        try withTestServer(
            TestServer(yaml: Self.configuration(upstream: upstream.server.port, resetter: resetter.port))
        ) { server throws in
            try body(server, upstream)
        }
    }

    static func configuration(upstream: Int, resetter: Int, tls: (port: Int, ca: String, otherCA: String)? = nil)
        -> String
    {
        var routes = """
            routes:
              - {id: "\(ids[0])", path: /post, form: checkout, upstream: "http://127.0.0.1:\(upstream)/v1/post", methods: [POST], headers: {X-Extra: added}}
              - {id: "\(ids[1])", path: /raw, upstream: "http://127.0.0.1:\(upstream)/raw", methods: [GET, POST, PUT]}
              - {id: "\(ids[2])", path: /shared, form: checkout, upstream: echo}
              - {id: "\(ids[3])", path: /shared, upstream: "http://127.0.0.1:\(upstream)/shared"}
              - {id: "\(ids[4])", path: /slow, upstream: "http://127.0.0.1:\(upstream)/never", response_timeout_s: 0.5}
              - {id: "\(ids[5])", path: /reset, upstream: "http://127.0.0.1:\(resetter)/"}
              - {id: "\(ids[6])", path: /refused, upstream: "http://127.0.0.1:1/"}

            """
        if let tls {
            routes += """
                  - {id: "\(UUID().uuidString)", path: /tls-ok, upstream: "https://localhost:\(tls.port)/", methods: [GET], ca_file: "\(tls.ca)"}
                  - {id: "\(UUID().uuidString)", path: /tls-wrong-host, upstream: "https://127.0.0.2:\(tls.port)/", methods: [GET], ca_file: "\(tls.ca)"}
                  - {id: "\(UUID().uuidString)", path: /tls-untrusted, upstream: "https://localhost:\(tls.port)/", methods: [GET], ca_file: "\(tls.otherCA)"}

                """
        }
        return TestServer.configurationWithTokens.replacingOccurrences(of: "routes: []", with: routes)
    }

    static let checkout = """
        {"fields":{"card_data.card_number":"4111 1111 1111 1111","card_data.card_cvc":"123",\
        "card_data.exp_date":"12/40","card_data.card_holder":"Jane Doe","customer.ssn":"123-45-6789"}}
        """

    @Test func formRoutesForwardTheRedactedBodyAndPassTheAnswerThrough() throws {
        try withProxyService { server, upstream in
            let r = try server.client().request(
                "POST", "/proxy/post/extra?x=1", json: Self.checkout,
                headers: [("Authorization", "Bearer secret"), ("X-Client", "c1")])
            #expect(r.status == 201, "\(r.text)")
            #expect(r.header("X-Upstream") == "yes")
            #expect(r.text == "upstream saw POST /v1/post/extra")
            let seen = try #require(upstream.seen.withLock { $0.last })
            #expect(seen.path == "/v1/post/extra" && seen.query == "x=1")
            #expect(seen.header("Authorization") == nil)
            #expect(seen.header("X-Client") == "c1")
            #expect(seen.header("X-Extra") == "added")
            #expect(seen.header("Content-Type") == "application/json")
            let body = String(decoding: seen.body, as: UTF8.self)
            #expect(!body.contains("4111111111111111") && !body.contains("4111 1111") && !body.contains("123-45-6789"))
            let json = try #require((try? JSONSerialization.jsonObject(with: Data(seen.body))) as? [String: Any])
            let number = ((json["card_data"] as? [String: Any])?["card_number"] as? String) ?? ""
            #expect(number.hasSuffix("1111") && number.count == 16 && number != "4111111111111111")
        }
    }

    @Test func upstreamErrorsPassThroughAndFailuresMapToVGSErrors() throws {
        try withProxyService { server, upstream in
            let client = try server.client()
            let notFound = try client.request("GET", "/proxy/raw/thing", headers: [("X-Want-Status", "404")])
            #expect(notFound.status == 404 && notFound.header("X-Upstream") == "yes")
            let failing = try client.request(
                "PUT", "/proxy/raw", body: Array("plain".utf8), headers: [("X-Want-Status", "503")])
            #expect(failing.status == 503 && failing.text == "upstream saw PUT /raw")
            #expect(upstream.seen.withLock { $0.last?.body } == Array("plain".utf8))

            let started = Date()
            let slow = try client.request("POST", "/proxy/slow", json: "{}")
            #expect(slow.status == 504 && slow.errorCode == 1408)
            #expect(Date().timeIntervalSince(started) < 5)
            let reset = try client.request("POST", "/proxy/reset", json: "{}")
            #expect(reset.status == 502 && reset.errorCode == 1400, "\(reset.text)")
            let refused = try client.request("POST", "/proxy/refused", json: "{}")
            #expect(refused.status == 502 && refused.errorCode == 1400)
            // The server is still healthy and the pool recovers.
            #expect(try client.request("GET", "/proxy/raw", headers: [("X-Want-Status", "200")]).status == 200)
        }
    }

    @Test func routesArePickedByPathAndRouteId() throws {
        try withProxyService { server, upstream in
            let client = try server.client()
            #expect(try client.request("POST", "/proxy/shared", json: Self.checkout).errorCode == 1404)
            let bad = try client.request(
                "POST", "/proxy/shared", json: Self.checkout, headers: [("X-Route-Id", "not-a-uuid")])
            #expect(bad.status == 400 && bad.errorCode == 1480)
            let echo = try client.request(
                "POST", "/proxy/shared", json: Self.checkout, headers: [("X-Route-Id", Self.ids[2])])
            #expect(echo.status == 200)
            #expect(((echo.json?["card_data"] as? [String: Any])?["card_holder"] as? String) == "Jane Doe")
            #expect(!echo.text.contains("4111111111111111"))
            let other = try client.request(
                "POST", "/proxy/shared", json: "{}", headers: [("X-Route-Id", Self.ids[3].uppercased())])
            #expect(other.status == 201)
            #expect(try client.request("POST", "/proxy/nowhere", json: "{}").errorCode == 1404)
            let wrongMethod = try client.request("GET", "/proxy/post")
            #expect(wrongMethod.status == 405 && wrongMethod.header("Allow") == "POST")
            #expect(try client.request("POST", "/proxy/post", json: #"{"fields":{}}"#).errorCode == 1001)
        }
    }

    @Test func clientsThatHangUpMidRequestLeaveTheServerHealthy() throws {
        try withProxyServer { server, upstream in
            for _ in 0..<20 {
                let quitter = try server.client()
                try quitter.send("POST /proxy/slow HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
            }  // every client is gone before its upstream deadline
            usleep(800_000)  // past the 0.5 s deadline: every exchange has finished and been freed
            let client = try server.client()
            #expect(try client.request("GET", "/healthz").status == 200)
            #expect(try client.request("GET", "/proxy/raw", headers: [("X-Want-Status", "200")]).status == 200)
            let logged = server.logs.lines.filter {
                $0.contains(#""route":"/proxy/{path...}""#) && $0.contains(#""status":504"#)
            }
            #expect(logged.count == 20)
        }
    }

    @Test func aConnectionThatCannotBeOpenedFailsAtTheConnectDeadline() throws {
        // A listener whose accept queue is full: further SYNs go unanswered, connect() hangs.
        let (fd, port) = LoopbackSocket.listening(backlog: 0)
        defer { close(fd) }
        var fillers: [Int32] = []
        defer { fillers.forEach { close($0) } }
        for _ in 0..<4 {
            let c = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            LoopbackSocket.connect(c, to: port)
            fillers.append(c)
        }
        usleep(100_000)
        let yaml = TestServer.configurationWithTokens.replacingOccurrences(
            of: "routes: []",
            with: """
                routes:
                  - {id: "\(UUID().uuidString)", path: /stuck, upstream: "http://127.0.0.1:\(port)/", methods: [GET], connect_timeout_s: 0.3, response_timeout_s: 10}

                """)
        try withTestServer(TestService(yaml: yaml)) { server throws in
            let started = Date()
            let r = try server.client().request("GET", "/proxy/stuck")
            #expect(r.status == 504 && r.errorCode == 1408, "\(r.text)")
            #expect(Date().timeIntervalSince(started) < 3)
        }
    }

    @Test(arguments: [
        "/proxy/raw/x%20HTTP/1.1%0d%0aX-Evil:%201%0d%0a%0d%0aGET%20/admin",  // request splitting
        "/proxy/raw/..%2f..%2fadmin", "/proxy/raw/%2e%2e/admin", "/proxy/raw/a/../../admin",  // escaping the route
        "/proxy/raw/%00", "/proxy/raw/%zz", "/proxy/%72aw/x",  // NUL, bad encoding, encoded route path
    ])
    func hostilePathsAreRefusedBeforeReachingTheUpstream(path: String) throws {
        try withProxyServer { server, upstream in
            let r = try server.client().request("GET", path)
            #expect(r.status == 400 && r.errorCode == 1002, "\(path): \(r.status) \(r.text)")
            #expect(upstream.seen.withLock { $0.isEmpty })
        }
    }

    @Test func encodedCharactersAreForwardedStillEncoded() throws {
        try withProxyService { server, upstream in
            let r = try server.client().request(
                "GET", "/proxy/raw/a%3Fb%2Fc?q=%20x", headers: [("X-Want-Status", "200")])
            #expect(r.status == 200)
            let seen = try #require(upstream.seen.withLock { $0.last })
            #expect(seen.rawPath == "/raw/a%3Fb%2Fc")
            #expect(seen.query == "q=%20x")
        }
    }

    @Test func aTimedOutExchangeGivesItsConnectionBack() throws {
        try withProxyServer { server, upstream in
            // More timeouts than a pool holds connections: each must free its connection.
            let clients = try (0..<70).map { _ in try server.client() }
            for c in clients { try c.send("POST /proxy/slow HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}") }
            for c in clients { #expect(try c.readResponse().status == 504) }
            let r = try server.client().request("GET", "/proxy/raw", headers: [("X-Want-Status", "200")])
            #expect(r.status == 200)
            let slow = try server.client().request("POST", "/proxy/slow", json: "{}")
            #expect(slow.status == 504)
        }
    }

    @Test func manyConcurrentProxiedRequestsShareFewConnections() throws {
        try withProxyServer { server, upstream in
            let failures = Atomic<Int>(0)
            let port = server.port
            DispatchQueue.concurrentPerform(iterations: 16) { i in
                guard let client = try? RawHTTPClient(port: port) else { failures.add(1, ordering: .relaxed); return }
                for j in 0..<20 {
                    let r = try? client.request("GET", "/proxy/raw/\(i)/\(j)", headers: [("X-Want-Status", "200")])
                    if r?.status != 200 || r?.text != "upstream saw GET /raw/\(i)/\(j)" {
                        failures.add(1, ordering: .relaxed)
                    }
                }
            }
            #expect(failures.load(ordering: .relaxed) == 0)
            #expect(upstream.seen.withLock { $0.count } == 320)
        }
    }

    // MARK: HTTPS

    @Test func httpsUpstreamsAreVerifiedByCAAndHostname() throws {
        let certificates = try TestCertificates()
        let directory = certificates.directory
        defer { certificates.remove() }
        let tlsPort = freeLoopbackPort()
        let tlsServer = Process()
        tlsServer.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        tlsServer.arguments = [
            "s_server", "-accept", "\(tlsPort)", "-cert", "server.pem", "-key", "server.key", "-www", "-quiet",
        ]
        tlsServer.currentDirectoryURL = URL(fileURLWithPath: directory.path)
        tlsServer.standardOutput = FileHandle.nullDevice
        tlsServer.standardError = FileHandle.nullDevice
        try tlsServer.run()
        defer { kill(tlsServer.processIdentifier, SIGKILL); tlsServer.waitUntilExit() }
        var up = false
        for _ in 0..<100 where !up {
            up = LoopbackSocket.isListening(tlsPort)
            if !up { usleep(50_000) }
        }
        try #require(up)

        let upstream = try Upstream()
        let resetter = Resetter()
        defer { upstream.server.shutdown(); resetter.stop() }
        try withTestServer(
            TestService(
                yaml: Self.configuration(
                    upstream: upstream.server.port, resetter: resetter.port,
                    tls: (tlsPort, "\(directory.path)/ca.pem", "\(directory.path)/other.pem")))
        ) { server throws in
            let client = try server.client()
            let ok = try client.request("GET", "/proxy/tls-ok")
            #expect(ok.status == 200, "\(ok.text.prefix(200))")
            #expect(ok.text.contains("s_server") || ok.text.contains("HTML"))
            let wrongHost = try client.request("GET", "/proxy/tls-wrong-host")
            #expect(wrongHost.status == 502 && wrongHost.errorCode == 1400)
            let untrusted = try client.request("GET", "/proxy/tls-untrusted")
            #expect(untrusted.status == 502 && untrusted.errorCode == 1400)
        }
    }
}

/// TLS termination: `server.tls` serves HTTPS with the configured certificate.
@Suite(.tags(.sockets)) struct TLSTerminationTests {
    @Test func theServerAnswersOverTLSWithItsCertificate() throws {
        let certificates = try TestCertificates()
        let directory = certificates.directory
        defer { certificates.remove() }
        let d = directory.path
        try withTestServer(TestServer(environment: [:], tlsFiles: ("\(d)/server.pem", "\(d)/server.key"))) {
            server throws in
            func curl(_ arguments: [String]) throws -> (Int32, String) {
                let p = Process()
                p.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
                p.arguments = ["-sS", "--max-time", "5"] + arguments
                let pipe = Pipe()
                p.standardOutput = pipe
                p.standardError = pipe
                try p.run()
                let out = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                p.waitUntilExit()
                return (p.terminationStatus, out)
            }
            let url = "https://localhost:\(server.port)/healthz"
            let trusted = try curl(["--cacert", "\(d)/ca.pem", url])
            #expect(trusted.0 == 0 && trusted.1.contains(#""status":"ok""#), "\(trusted.1)")
            let untrusted = try curl(["--cacert", "\(d)/other.pem", url])
            #expect(untrusted.0 != 0)
            let tooOld = try curl(["--cacert", "\(d)/ca.pem", "--tls-max", "1.1", url])
            #expect(tooOld.0 != 0)
            // Plain HTTP to the TLS port gets no answer.
            #expect((try? RawHTTPClient(port: server.port, timeout: 1).request("GET", "/healthz")) == nil)
        }
    }
}
