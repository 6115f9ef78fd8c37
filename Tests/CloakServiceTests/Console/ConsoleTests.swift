import CloakCore
import CloakCrypto
import CloakHTTP
import CloakTesting
import Foundation
import Synchronization
import Testing

@testable import CloakService

/// Issue 59, item 3: the console's sessions, cookie and listener, without a browser (the browser
/// walks it in Tests/Browser/console_test.py).
@Suite(.tags(.racy, .browser)) struct ConsoleSessionTests {
    final class Clock: Sendable {
        let now = Mutex(1_000.0)
        func advance(_ seconds: Double) { now.withLock { $0 += seconds } }
        var read: @Sendable () -> Double { { self.now.withLock { $0 } } }
    }

    static func token(_ id: String, _ scopes: Set<Scope>) -> ServiceConfiguration.AccessToken {
        ServiceConfiguration.AccessToken(
            id: id, sha256: Digest.sha256(Array(id.utf8)), scopes: scopes)
    }

    @Test func aSessionEndsWhenIdleOrPastItsLifeAndEachUseKeepsItAlive() {
        let clock = Clock()
        let sessions = ConsoleSessions(idleSeconds: 900, maxSeconds: 3_600, clock: clock.read)
        let (cookie, session) = sessions.signIn(Self.token("ops", [.tokensAdmin, .aliasesReveal, .auditRead]))
        // Only the console's scopes ride the session; what it may grant is the token's.
        #expect(session.scopes == [.tokensAdmin, .auditRead])
        #expect(session.held.contains(.aliasesReveal))
        for _ in 0..<4 {
            clock.advance(899)
            #expect(sessions.use(cookie) != nil)
        }
        clock.advance(3_600 - 4 * 899)
        #expect(sessions.use(cookie) == nil, "past session_max_s, used or not")
        let (idle, _) = sessions.signIn(Self.token("ops", [.tokensAdmin]))
        clock.advance(900)
        #expect(sessions.use(idle) == nil, "unused for session_idle_s")
        #expect(sessions.count == 0, "ended sessions are forgotten")
    }

    @Test func signOutEndsOnlyThatSessionAndCookiesAreUnguessable() {
        let sessions = ConsoleSessions(idleSeconds: 900, maxSeconds: 3_600)
        let (a, first) = sessions.signIn(Self.token("a", [.auditRead]))
        let (b, second) = sessions.signIn(Self.token("b", [.auditRead]))
        #expect(a != b && first.csrf != second.csrf)
        #expect(
            Data(
                base64Encoded: a.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/") + "="
            )?.count == 32)
        sessions.end(a)
        #expect(sessions.use(a) == nil)
        #expect(sessions.use(b)?.tokenID == "b")
        #expect(sessions.use(b + "x") == nil && sessions.use("") == nil)
    }

    @Test func oneTokenHoldsAtMostItsShareOfSessions() {
        let clock = Clock()
        let sessions = ConsoleSessions(idleSeconds: 900, maxSeconds: 3_600, clock: clock.read)
        let (admin, _) = sessions.signIn(Self.token("admin", [.tokensAdmin]))
        var first: String?
        for _ in 0..<(ConsoleSessions.perToken + 5) {
            clock.advance(1)
            let (cookie, _) = sessions.signIn(Self.token("integration", [.auditRead]))
            first = first ?? cookie
        }
        #expect(sessions.count == ConsoleSessions.perToken + 1)
        #expect(sessions.use(admin) != nil, "another token's sign-ins end none of the admin's sessions")
        #expect(sessions.use(first!) == nil)
    }

    @Test func theTableHoldsAtMostItsCapacityEndingTheLeastRecentlyUsed() {
        let clock = Clock()
        let sessions = ConsoleSessions(idleSeconds: 900, maxSeconds: 3_600, clock: clock.read)
        let (oldest, _) = sessions.signIn(Self.token("first", [.auditRead]))
        clock.advance(1)
        for i in 0..<ConsoleSessions.capacity { _ = sessions.signIn(Self.token("t\(i)", [.auditRead])) }
        #expect(sessions.count == ConsoleSessions.capacity)
        #expect(sessions.use(oldest) == nil)
    }

    @Test(
        arguments: [
            ("a=1; cloak_console=s; b=2", "a=1; b=2"),
            ("cloak_console=s", nil),
            ("__Host-cloak_console=s;a=1", "a=1"),
            ("a=cloak_console; b=2", "a=cloak_console; b=2"),
            ("xcloak_console=1", "xcloak_console=1"),
        ] as [(String, String?)])
    func otherDoorsDropTheConsolesCookieAndKeepTheRest(cookie: String, kept: String?) {
        var headers: [(name: String, value: String)] = [("Host", "x"), ("Cookie", cookie)]
        ConsoleCookie.strip(&headers)
        #expect(headers.first { $0.name == "Cookie" }?.value == kept)
        #expect(headers.first?.name == "Host")
    }

    @Test func theCookieIsHttpOnlyStrictAndSecureOnTLS() {
        let plain = ConsoleCookie.setting("v", tls: false, maxAge: 60)
        let secure = ConsoleCookie.setting("v", tls: true, maxAge: 60)
        #expect(plain == "cloak_console=v; Path=/; Max-Age=60; HttpOnly; SameSite=Strict")
        #expect(secure == "__Host-cloak_console=v; Path=/; Max-Age=60; HttpOnly; SameSite=Strict; Secure")
        #expect(ConsoleCookie.only(in: [("cookie", " a=1; cloak_console=v2")], named: "cloak_console") == "v2")
        // Two of them (one planted from another port of the host) are no session at all.
        #expect(
            ConsoleCookie.only(
                in: [("Cookie", "cloak_console=a"), ("Cookie", "cloak_console=b")], named: "cloak_console")
                == nil)
    }
}

@Suite(.tags(.browser)) struct ConsoleConfigurationTests {
    static func issues(_ console: String, tls: TestCertificates? = nil) -> [String] {
        var yaml = TestServer.configurationWithTokens.replacingOccurrences(
            of: #"  listen: "127.0.0.1:0""#, with: "  " + console)
        if let tls {
            yaml = yaml.replacingOccurrences(
                of: "  # tls: {cert: /etc/cloak/chain.pem, key: /etc/cloak/key.pem}",
                with: "  tls: {cert: \(tls.serverCertificate), key: \(tls.serverKey)}")
        }
        do {
            _ = try ServiceConfiguration.parse(yaml: yaml, environment: [:])
            return []
        } catch {
            return error.issues.map(\.description)
        }
    }

    @Test func offLoopbackTheConsoleNeedsTLS() throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        #expect(Self.issues(#"listen: "0.0.0.0:8082""#).contains { $0.hasPrefix("console.listen") })
        #expect(Self.issues(#"listen: "10.1.2.3:8082""#).contains { $0.contains("needs TLS") })
        #expect(Self.issues(#"listen: "[::]:8082""#).contains { $0.hasPrefix("console.listen") })
        // A wildcard listener names no host to check requests by: it needs console.origin.
        #expect(
            Self.issues(#"listen: "0.0.0.0:8082""#, tls: certificates).allSatisfy { $0.hasPrefix("console.origin") })
        #expect(
            Self.issues("listen: \"0.0.0.0:8082\"\n  origin: \"https://console.example:8082\"", tls: certificates)
                .isEmpty)
        #expect(
            Self.issues("listen: \"127.0.0.1:8082\"\n  origin: \"https://console.example/path\"").contains {
                $0.hasPrefix("console.origin")
            })
        for loopback in ["127.0.0.1:8082", "127.9.9.9:1", "localhost:8082", "[::1]:8082"] {
            #expect(Self.issues(#"listen: "\#(loopback)""#).isEmpty, "\(loopback)")
        }
    }

    @Test func malformedSessionSettingsAreIssues() {
        #expect(Self.issues(#"listen: "nowhere""#).contains { $0.hasPrefix("console.listen") })
        let yaml = { (from: String, to: String) in
            TestServer.configurationWithTokens.replacingOccurrences(of: from, with: to)
        }
        for (from, to, path) in [
            ("  session_idle_s: 900", "  session_idle_s: 1", "console.session_idle_s"),
            ("  session_max_s: 28800", "  session_max_s: 100", "console.session_idle_s"),  // idle past max
            ("  session_max_s: 28800", "  session_max_s: 28800\n  theme: dark", "console.theme"),
        ] {
            let text = yaml(from, to)
            #expect(text != TestServer.configurationWithTokens, "\(from)")
            do {
                _ = try ServiceConfiguration.parse(yaml: text, environment: [:])
                Issue.record("\(to) was taken")
            } catch {
                #expect(error.issues.map(\.description).contains { $0.hasPrefix(path) }, "\(error.issues)")
            }
        }
    }

    @Test func thePreviewsElementsOriginIsAnOriginAndTheConsoleMustBeAllowedThere() throws {
        let base = TestServer.configurationWithTokens
        let bad = base.replacingOccurrences(
            of: "  session_max_s: 28800", with: "  session_max_s: 28800\n  elements_origin: \"http://127.0.0.1:8080/\"")
        #expect(bad != base)
        #expect(throws: ConfigurationError.self) { try ServiceConfiguration.parse(yaml: bad, environment: [:]) }
        let good = base.replacingOccurrences(
            of: "  session_max_s: 28800", with: "  session_max_s: 28800\n  elements_origin: \"http://127.0.0.1:8080\"")
        let configuration = try ServiceConfiguration.parse(yaml: good, environment: [:])
        #expect(configuration.console.elementsOrigin == "http://127.0.0.1:8080")
        #expect(configuration.warnings.contains { $0.hasPrefix("console.elements_origin") })
        let csp = ConsoleGuardMiddleware.contentSecurityPolicy(elementsOrigin: "http://127.0.0.1:8080")
        #expect(
            csp.contains("script-src 'self' http://127.0.0.1:8080") && csp.contains("frame-src http://127.0.0.1:8080"))
        #expect(ConsoleGuardMiddleware.contentSecurityPolicy(elementsOrigin: nil).contains("frame-src 'none'"))
    }

    @Test func theConsoleNeedsARestartToChange() throws {
        let running = try ServiceConfiguration.parse(yaml: TestServer.configurationWithTokens, environment: [:])
        var next = running
        next.console.sessionIdleSeconds = 60
        #expect(ServiceHost.needsRestart(running, next).contains("console"))
    }
}

/// The console's listener on the real server: sessions, CSRF and Origin, scopes, and what the
/// other doors do with its cookie.
@Suite(.tags(.racy, .sockets, .browser)) struct ConsoleEndToEndTests {
    static let ops = "console-ops-token"
    static let narrow = "console-audit-token"
    static let payer = "console-payer-token"

    static var yaml: String {
        func entry(_ id: String, _ token: String, _ scopes: String) -> String {
            let hex = Digest.sha256(Array(token.utf8)).map { String(format: "%02x", $0) }.joined()
            return "{id: \(id), sha256: \"\(hex)\", scopes: [\(scopes)]}"
        }
        return TestServer.configurationWithTokens.replacingOccurrences(
            of: "  tokens: [",
            with: "  tokens: [\(entry("ops", ops, "tokens:admin, audit:read, aliases:create")), "
                + "\(entry("auditor", narrow, "audit:read")), \(entry("payer", payer, "aliases:reveal, egress:*")), ")
    }

    static let origin = ("Origin", "http://127.0.0.1")

    /// `token` with its last character changed (to one it certainly is not).
    static func altered(_ token: String) -> String {
        String(token.dropLast()) + (token.hasSuffix("A") ? "B" : "A")
    }

    /// Signs in with `token`; the cookie pair for `Cookie:` and the CSRF token.
    static func signIn(_ server: TestServer, _ token: String) throws -> (cookie: String, csrf: String) {
        let answer = try server.consoleClient().request(
            "POST", "/console/session", json: #"{"token":"\#(token)"}"#, headers: [origin])
        #expect(answer.status == 201, "\(answer.text)")
        let setCookie = try #require(answer.header("Set-Cookie"))
        #expect(setCookie.contains("HttpOnly") && setCookie.contains("SameSite=Strict"))
        let pair = String(setCookie.prefix { $0 != ";" })
        return (pair, try #require(answer.json?["csrf"] as? String))
    }

    @Test func aSessionCarriesOnlyTheConsolesScopesAndOnlyOnItsListener() throws {
        try withTestServer(TestServer(yaml: Self.yaml, console: true)) { server in
            let (cookie, csrf) = try Self.signIn(server, Self.ops)
            let console = try server.consoleClient()
            let listed = try console.request("GET", "/console/api/admin/tokens", headers: [("Cookie", cookie)])
            #expect(listed.status == 200, "\(listed.text)")
            #expect(listed.header("Content-Security-Policy")?.contains("frame-ancestors 'none'") == true)
            #expect(listed.header("Cache-Control") == "no-store")
            // The API listener takes no session, and the console no bearer token.
            let api = try server.client().request("GET", "/admin/tokens", headers: [("Cookie", cookie)])
            #expect(api.status == 401)
            let bearer = try console.request(
                "GET", "/console/api/admin/tokens", headers: [("Authorization", "Bearer \(Self.ops)")])
            #expect(bearer.status == 401)
            // Nothing that reveals or stores answers on the console's listener.
            for path in ["/console/api/aliases", "/console/api/admin/../aliases", "/aliases", "/console/api/files/x"] {
                let answer = try console.request("GET", path, headers: [("Cookie", cookie)])
                #expect(answer.status == 404 || answer.status == 400, "\(path): \(answer.status)")
            }
            #expect(try server.client().request("GET", "/console/").status == 404)
            // A token it creates may hold what the signed-in token holds, beyond the console's scopes.
            let made = try console.request(
                "POST", "/console/api/admin/tokens", json: #"{"id":"minted","scopes":["aliases:create"]}"#,
                headers: [("Cookie", cookie), ("X-Cloak-CSRF", csrf), Self.origin])
            #expect(made.status == 201, "\(made.text)")
            let wider = try console.request(
                "POST", "/console/api/admin/tokens", json: #"{"id":"wider","scopes":["aliases:reveal"]}"#,
                headers: [("Cookie", cookie), ("X-Cloak-CSRF", csrf), Self.origin])
            #expect(wider.status == 403, "\(wider.text)")
        }
    }

    @Test func everyChangeNeedsTheConsolesOriginAndTheSessionsCSRFToken() throws {
        try withTestServer(TestServer(yaml: Self.yaml, console: true)) { server in
            let (cookie, csrf) = try Self.signIn(server, Self.ops)
            let body = #"{"id":"forged","scopes":["audit:read"]}"#
            for (headers, why) in [
                ([("Cookie", cookie), ("X-Cloak-CSRF", csrf)], "no Origin"),
                ([("Cookie", cookie), ("X-Cloak-CSRF", csrf), ("Origin", "http://evil.example")], "another origin"),
                ([("Cookie", cookie), ("X-Cloak-CSRF", csrf), ("Origin", "null")], "an opaque origin"),
                ([("Cookie", cookie), Self.origin], "no CSRF token"),
                ([("Cookie", cookie), ("X-Cloak-CSRF", Self.altered(csrf)), Self.origin], "a wrong one"),
                ([("X-Cloak-CSRF", csrf), Self.origin], "no session"),
            ] {
                let answer = try server.consoleClient().request(
                    "POST", "/console/api/admin/tokens", json: body, headers: headers)
                #expect(answer.status == 403 || answer.status == 401, "\(why): \(answer.status) \(answer.text)")
            }
            // A sign-in from another origin is refused too (login CSRF).
            let signIn = try server.consoleClient().request(
                "POST", "/console/session", json: #"{"token":"\#(Self.ops)"}"#,
                headers: [("Origin", "http://evil.example")])
            #expect(signIn.status == 403)
            let listed = try server.consoleClient().request(
                "GET", "/console/api/admin/tokens", headers: [("Cookie", cookie)])
            #expect(!listed.text.contains("forged"))
        }
    }

    /// Review V, item 9: the console answers only requests for its own host (its listen
    /// address and bound port here): a page whose name was rebound to 127.0.0.1 sends its own
    /// name as `Host` and is refused, reads included, and its `Origin` is no longer compared
    /// with a `Host` it chose.
    @Test func aRequestForAnotherHostIsRefusedEvenWithAMatchingOrigin() throws {
        try withTestServer(TestServer(yaml: Self.yaml, console: true)) { server in
            let port = try #require(server.console?.port)
            let (cookie, csrf) = try Self.signIn(server, Self.ops)
            let own = try server.consoleClient().request(
                "GET", "/console/api/admin/tokens", headers: [("Cookie", cookie), ("Host", "127.0.0.1:\(port)")])
            #expect(own.status == 200, "\(own.text)")
            for host in ["rebound.example:\(port)", "rebound.example", "127.0.0.1:\(port + 1)", "127.0.0.2:\(port)"] {
                let read = try server.consoleClient().request(
                    "GET", "/console/api/admin/tokens", headers: [("Cookie", cookie), ("Host", host)])
                #expect(read.status == 403 && read.text.contains("console's host"), "\(host): \(read.text)")
                let change = try server.consoleClient().request(
                    "POST", "/console/api/admin/tokens", json: #"{"id":"rebound","scopes":["audit:read"]}"#,
                    headers: [("Cookie", cookie), ("X-Cloak-CSRF", csrf), ("Host", host), ("Origin", "http://\(host)")])
                #expect(change.status == 403, "\(host): \(change.text)")
            }
            let page = try server.consoleClient().request("GET", "/console/", headers: [("Host", "rebound.example")])
            #expect(page.status == 403)
        }
    }

    @Test(
        arguments: [
            // (console.origin, listen, Host, Origin, host admitted, origin admitted)
            (nil, "127.0.0.1", "127.0.0.1:8082", "http://127.0.0.1:8082", true, true),
            (nil, "127.0.0.1", "localhost:8082", "http://localhost:8082", true, true),
            (nil, "127.0.0.1", "127.0.0.1", "http://127.0.0.1", true, true),
            (nil, "127.0.0.1", "evil.example:8082", "http://evil.example:8082", false, false),
            (nil, "127.0.0.1", "127.0.0.1:9999", "https://127.0.0.1:8082", false, false),
            (
                "https://console.example:8443", "127.0.0.1", "console.example:8443", "https://console.example:8443",
                true, true
            ),
            ("https://console.example:8443", "127.0.0.1", "127.0.0.1:8082", "https://console.example", false, false),
            ("https://console.example", "127.0.0.1", "CONSOLE.example", "https://console.example", true, true),
            ("https://console.example", "127.0.0.1", "console.example:443", "https://console.example:444", true, false),
        ] as [(String?, String, String, String, Bool, Bool)])
    func theConsolesHostsAreItsOriginOrItsListenAddress(
        origin: String?, listen: String, host: String, sent: String, hostOK: Bool, originOK: Bool
    ) throws {
        var settings = ConsoleSettings()
        settings.listen = .init(host: listen, port: 8082)
        settings.origin = origin
        let hosts = try #require(settings.hosts(tls: false, boundPort: 8082))
        #expect(hosts.admits(host) == hostOK, "\(host)")
        #expect(hosts.admitsOrigin(sent) == originOK, "\(sent)")
    }

    @Test func aWildcardListenerNeedsTheConsolesOrigin() throws {
        let wildcard = TestServer.shippedConfiguration.replacingOccurrences(
            of: "console:\n  listen: \"127.0.0.1:0\"", with: "console:\n  listen: \"0.0.0.0:8082\"")
        #expect(wildcard != TestServer.shippedConfiguration)
        #expect(throws: ConfigurationError.self) { try ServiceConfiguration.parse(yaml: wildcard) }
        do {
            _ = try ServiceConfiguration.parse(yaml: wildcard)
        } catch {
            #expect("\(error)".contains("console.origin"), "\(error)")
        }
        let named = wildcard.replacingOccurrences(
            of: "  session_idle_s: 900", with: "  origin: \"https://console.example:8443\"\n  session_idle_s: 900")
        do {
            _ = try ServiceConfiguration.parse(yaml: named)
        } catch {
            #expect(!"\(error)".contains("console.origin"), "\(error)")
        }
        var settings = ConsoleSettings()
        settings.listen = .init(host: "0.0.0.0", port: 8082)
        #expect(settings.hosts(tls: true, boundPort: 8082) == nil)
    }

    @Test func signInRefusalsAreCountedAndAudited() throws {
        try withTestServer(TestServer(yaml: Self.yaml, console: true)) { server in
            let console = try server.consoleClient()
            let wrong = try console.request(
                "POST", "/console/session", json: #"{"token":"not-a-token"}"#, headers: [Self.origin])
            #expect(wrong.status == 401)
            let payer = try console.request(
                "POST", "/console/session", json: #"{"token":"\#(Self.payer)"}"#, headers: [Self.origin])
            #expect(payer.status == 403 && payer.text.contains("none of the console's scopes"), "\(payer.text)")
            let huge = #"{"token":""# + String(repeating: "A", count: 5_000) + #""}"#
            for body in [#"{"token":1}"#, #"{"token":"x","more":1}"#, "[]", #"{"token":""}"#, huge, "{", "\u{0}"] {
                let answer = try console.request("POST", "/console/session", json: body, headers: [Self.origin])
                #expect(answer.status == 400, "\(body): \(answer.status)")
            }
            let (cookie, _) = try Self.signIn(server, Self.ops)
            #expect(server.logs.text.contains(#""action":"console_sign_in""#))
            #expect(!server.logs.text.contains(Self.ops) && !server.logs.text.contains(Self.payer))
            #expect(!server.logs.text.contains(String(cookie.split(separator: "=")[1])))
            // A token with audit:read only sees its own pages.
            let (narrow, _) = try Self.signIn(server, Self.narrow)
            let tokens = try console.request("GET", "/console/api/admin/tokens", headers: [("Cookie", narrow)])
            #expect(tokens.status == 403)
            let overview = try console.request("GET", "/console/api/admin/overview", headers: [("Cookie", narrow)])
            #expect(overview.status == 200)
        }
    }

    @Test func revokingTheTokenEndsItsSessionsAtOnce() throws {
        try withTestServer(TestServer(yaml: Self.yaml, console: true)) { server in
            let made = try server.client().request(
                "POST", "/admin/tokens", json: #"{"id":"shortlived","scopes":["audit:read"]}"#,
                headers: [("Authorization", "Bearer \(Self.ops)")])
            let secret = try #require(made.json?["token"] as? String)
            let (cookie, _) = try Self.signIn(server, secret)
            let console = try server.consoleClient()
            #expect(try console.request("GET", "/console/session", headers: [("Cookie", cookie)]).status == 200)
            let revoked = try server.client().request(
                "DELETE", "/admin/tokens/shortlived", headers: [("Authorization", "Bearer \(Self.ops)")])
            #expect(revoked.status == 204)
            let after = try console.request("GET", "/console/session", headers: [("Cookie", cookie)])
            #expect(after.json?["signed_in"] as? Bool == false, "\(after.text)")
            #expect(try console.request("GET", "/console/api/admin/audit", headers: [("Cookie", cookie)]).status == 401)
        }
    }

    @Test func signOutEndsTheSessionAndClearsTheCookie() throws {
        try withTestServer(TestServer(yaml: Self.yaml, console: true)) { server in
            let (cookie, csrf) = try Self.signIn(server, Self.ops)
            let console = try server.consoleClient()
            let out = try console.request(
                "DELETE", "/console/session", headers: [("Cookie", cookie), ("X-Cloak-CSRF", csrf), Self.origin])
            #expect(out.status == 204)
            #expect(out.header("Set-Cookie")?.contains("Max-Age=0") == true)
            let after = try console.request("GET", "/console/session", headers: [("Cookie", cookie)])
            #expect(after.json?["signed_in"] as? Bool == false)
            #expect(!server.logs.text.contains(#""endpoint":"console-session""#), "a signed-out page is no refusal")
        }
    }

    /// The console lists tokens a page at a time: ten thousand would not fit one answer.
    @Test func theTokenListComesInPagesById() throws {
        try withTestServer(TestServer(yaml: Self.yaml)) { server in
            let bearer = [("Authorization", "Bearer \(Self.ops)")]
            for id in ["c-token", "a-token", "b-token"] {
                let made = try server.client().request(
                    "POST", "/admin/tokens", json: #"{"id":"\#(id)","scopes":["audit:read"]}"#, headers: bearer)
                #expect(made.status == 201)
            }
            var seen: [String] = []
            var after: String?
            for _ in 0..<10 {
                let query = "limit=2" + (after.map { "&after=\($0)" } ?? "")
                let page = try server.client().request("GET", "/admin/tokens?\(query)", headers: bearer)
                let items = try #require(page.json?["data"] as? [[String: Any]])
                #expect(items.count <= 2)
                seen += items.compactMap { $0["id"] as? String }
                after = page.json?["next"] as? String
                if after == nil { break }
            }
            #expect(seen == seen.sorted() && Set(seen).isSuperset(of: ["a-token", "b-token", "c-token", "ops"]))
            #expect(after == nil)
            #expect(seen.count == Set(seen).count)
            let whole = try server.client().request("GET", "/admin/tokens", headers: bearer)
            #expect((whole.json?["data"] as? [Any])?.count == seen.count)
            for bad in ["limit=0", "limit=1001", "limit=x", "after=", "page=2", "limit=1&limit=2"] {
                #expect(
                    try server.client().request("GET", "/admin/tokens?\(bad)", headers: bearer).status == 400, "\(bad)")
            }
        }
    }

    /// A browser sends the console's cookie to every port of the host: a route must never pass it on.
    @Test func aRouteNeverForwardsTheConsolesCookie() throws {
        let upstream = RawUpstream()
        defer { upstream.stop() }
        let yaml = Self.yaml.replacingOccurrences(
            of: "\nroutes: []",
            with: "\nroutes:\n  - {id: \"6b1e2c1a-8c1f-4d0e-9d7a-1f0a2b3c4d5e\", path: /up, "
                + "upstream: \"http://127.0.0.1:\(upstream.port)/in\"}")
        try withTestServer(TestServer(yaml: yaml, console: true)) { server in
            let (cookie, _) = try Self.signIn(server, Self.ops)
            let value = String(cookie.split(separator: "=")[1])
            let sent = try server.client().request(
                "POST", "/proxy/up", json: #"{"a":1}"#,
                headers: [("Cookie", "shop=1; \(cookie); other=2"), ("Cookie", "__Host-cloak_console=\(value)")])
            #expect(sent.status == 204, "\(sent.text)")
            let wire = String(decoding: upstream.bytes, as: UTF8.self)
            #expect(wire.contains("shop=1; other=2"), "\(wire)")
            #expect(!wire.contains(value) && !wire.contains("cloak_console"), "\(wire)")
        }
    }

    /// Nor may an upstream plant one: its `Set-Cookie` for the console's name never reaches the browser.
    @Test func anUpstreamCannotSetTheConsolesCookie() throws {
        let answer = Array(
            ("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nSet-Cookie: cloak_console=planted; Path=/\r\n"
                + "Set-Cookie: __Host-cloak_console=planted; Path=/; Secure\r\nSet-Cookie: shop=1\r\n\r\nok").utf8)
        let upstream = CannedUpstream(answer: answer)
        defer { upstream.stop() }
        let yaml = Self.yaml.replacingOccurrences(
            of: "\nroutes: []",
            with: "\nroutes:\n  - {id: \"6b1e2c1a-8c1f-4d0e-9d7a-1f0a2b3c4d5e\", path: /up, "
                + "upstream: \"http://127.0.0.1:\(upstream.port)/in\"}")
        try withTestServer(TestServer(yaml: yaml)) { server in
            let got = try server.client().request("POST", "/proxy/up", json: #"{"a":1}"#)
            #expect(got.status == 200, "\(got.text)")
            let cookies = got.headers.filter { $0.name.lowercased() == "set-cookie" }.map(\.value)
            #expect(cookies == ["shop=1"], "\(cookies)")
        }
    }

    /// Review V, item 9: names compared as a browser reads them (RFC 6265 §5.2: trimmed), so a
    /// space before `=`, a tab, or a nameless cookie whose value the browser sends back as
    /// `cloak_console=…` does not pass; other cookies do.
    @Test(arguments: [
        ("cloak_console =x", true), ("\tcloak_console\t=x", true), (" __Host-cloak_console = x; Secure", true),
        ("=cloak_console=x", true), (" = cloak_console =x", true), ("cloak_console", true),
        ("CLOAK_CONSOLE=x", true), ("cloak_console_x=1", false), ("shop=cloak_console", false),
        ("x=1; cloak_console=2", false), ("=shop=1", false),
    ])
    func aSetCookieIsTheConsolesAsABrowserReadsIt(header: String, consoles: Bool) {
        #expect(ConsoleCookie.sets(header) == consoles, "\(header)")
    }
}

@Suite(.tags(.racy, .browser)) struct ConsoleReadsTests {
    /// The key page's count: one at a time, the last one while a new one runs, never a scan a caller.
    @Test func keyCountsRunOneAtATimeAndServeTheLastMeanwhile() {
        let counts = AdminKeysHandler.Counts()
        let started = Mutex(0)
        let pending = Mutex<[@Sendable (Result<[String: Int], any Error>) -> Void]>([])
        let count: (@escaping @Sendable (Result<[String: Int], any Error>) -> Void) -> Void = { done in
            started.withLock { $0 += 1 }
            pending.withLock { $0.append(done) }
        }
        let answers = Mutex<[[String: Int]]>([])
        let answer: @Sendable (Result<[String: Int], any Error>) -> Void = { result in
            if case let .success(c) = result { answers.withLock { $0.append(c) } }
        }
        let clock: @Sendable () -> Double = { 100 }
        for _ in 0..<5 { counts.read(now: 100, count: count, clock: clock, answer) }
        #expect(started.withLock { $0 } == 1 && answers.withLock { $0.isEmpty })
        for done in pending.withLock({ $0 }) { done(.success(["k1": 7])) }
        #expect(answers.withLock { $0.count } == 5)
        counts.read(now: 150, count: count, clock: clock, answer)
        #expect(started.withLock { $0 } == 1, "fresh: no count")
        counts.read(now: 170, count: count, clock: clock, answer)
        counts.read(now: 171, count: count, clock: clock, answer)
        #expect(started.withLock { $0 } == 2, "stale: one count, and the last answers meanwhile")
        #expect(answers.withLock { $0.count } == 8)
    }

    /// A heartbeat is the database's, not the node's: only known, small members are shown.
    @Test func aHeartbeatsStatusKeepsOnlyKnownSmallMembers() throws {
        let big = String(repeating: "x", count: 10_000)
        let status = try JSONParser().parse(
            Array(
                #"{"version":"0.1.0","ready":true,"keys":{"current":"k1","versions":["k1"]},"evil":"\#(big)","store":"\#(big)"}"#
                    .utf8))
        let kept = BinTableNode.status(status)
        #expect(kept?["version"]?.stringValue == "0.1.0")
        #expect(kept?["keys"] != nil && kept?["evil"] == nil && kept?["store"] == nil)
        #expect(BinTableNode.status(.string("x")) == nil)
    }
}

/// The console of a real `cloak serve` process, as docs/console.md has an operator use it.
@Suite(.serialized, .tags(.processes, .sockets, .browser)) struct ConsoleProcessTests {
    /// `cloak tokens create`, then at once the sign-in: the node reads the store for a token it
    /// does not know yet (its timer would take an hour here).
    @Test func aTokenTheCommandJustMadeSignsInAtOnce() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let consolePort = try CloakNode.freePort()
        let node = try CloakNode(
            store: "sqlite:\(directory.path)/cloak.db", directory: directory.path,
            environment: ["CLOAK_AUTH_REFRESH_S": "3600", "CLOAK_CONSOLE_LISTEN": "127.0.0.1:\(consolePort)"])
        defer { node.stop() }
        #expect(RawHTTPClient.waitUntil(port: consolePort, path: "/console/", answers: 200))
        let created = try node.command([
            "tokens", "create", "--id", "operator", "--scopes", "audit:read", "--ttl", "1h",
        ])
        #expect(created.status == 0, "\(created.output)")
        let secret = try #require(TokenCommandTests.secret(created.output), "\(created.output)")
        let signIn = try RawHTTPClient(port: consolePort).request(
            "POST", "/console/session", json: #"{"token":"\#(secret)"}"#, headers: [("Origin", "http://127.0.0.1")])
        #expect(signIn.status == 201, "\(signIn.text)")
        let madeUp = try RawHTTPClient(port: consolePort).request(
            "POST", "/console/session", json: #"{"token":"ck_made_up_token_0123456789"}"#,
            headers: [("Origin", "http://127.0.0.1")])
        #expect(madeUp.status == 401)
    }
}
