import CloakCore

/// `console`: the operator console's listener and sessions (docs/console.md). Off by default: no
/// listener, and no `/console/` path on any other.
package struct ConsoleSettings: Sendable, Equatable {
    /// `console.listen`: `HOST:PORT` of the console's own listener (nil: no console). It speaks
    /// TLS with `server.tls` when that is set; off loopback it must (``ConfigReader`` refuses).
    package var listen: Listen?
    /// `console.session_idle_s`: a session unused this long ends (default 900).
    package var sessionIdleSeconds = 900
    /// `console.session_max_s`: a session ends this long after its sign-in, used or not (8 h).
    package var sessionMaxSeconds = 28_800
    /// `console.elements_origin`: where the operator's browser reaches Cloak Elements (the API
    /// listener's origin, `http://127.0.0.1:8080`), for the forms page's live preview of each
    /// form's fields; nil: no preview. The console's page may then load `cloak.js` and frames
    /// from there (its CSP names it), and `elements.allowed_origins` must name the console.
    package var elementsOrigin: String?
    /// `console.origin`: the URL operators reach the console at (`https://console.example:8443`),
    /// when it is not its listen address (a name in DNS, a balancer in front): every request's
    /// `Host` and every change's `Origin` must be its (review V, item 9: comparing `Origin` with
    /// the request's own `Host` let a DNS-rebinding page pass). Required on a wildcard listener.
    package var origin: String?

    package struct Listen: Sendable, Equatable {
        package var host: String
        package var port: Int
        package init(host: String, port: Int) {
            self.host = host
            self.port = port
        }

        /// Whether only this machine can reach it: `localhost`, 127.0.0.0/8 or `::1`.
        package var isLoopback: Bool {
            let h = host.lowercased()
            if h == "localhost" || h == "::1" || h == "0:0:0:0:0:0:0:1" { return true }
            let parts = h.split(separator: ".", omittingEmptySubsequences: false)
            return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
        }

        /// `0.0.0.0` or `::`: every address of the machine, none of them a name to check `Host` by.
        package var isWildcard: Bool { host == "0.0.0.0" || host == "::" || host == "[::]" || host.isEmpty }
    }

    /// The `Host` values the console answers (review V, item 9), and the scheme of its origin.
    /// With `console.origin`: its host and port. Otherwise the listen address (with `localhost`
    /// for a loopback one) on the port it is bound to, or with no port (what a client that is
    /// not a browser sends); a browser on a rebound name sends that name, refused.
    package struct Hosts: Sendable, Equatable {
        package var scheme: String
        package var names: Set<String>
        package var port: Int
        /// Whether a `Host` without a port passes (never with `console.origin`: a browser names it).
        package var portOptional: Bool

        /// Whether `host` (a request's `Host` header) names the console.
        package func admits(_ host: String?) -> Bool {
            guard let host else { return false }
            let lowered = host.lowercased()
            var name = lowered
            var givenPort: Int?
            if let colon = lowered.lastIndex(of: ":"), !lowered.hasSuffix("]") {
                guard let p = Int(lowered[lowered.index(after: colon)...]) else { return false }
                name = String(lowered[..<colon])
                givenPort = p
            }
            guard names.contains(name) else { return false }
            if let givenPort { return givenPort == port }
            // No port: the scheme's default, or (loopback, no console.origin) a client that names none.
            return port == (scheme == "https" ? 443 : 80) || portOptional
        }

        /// Whether `origin` (a change's `Origin` header) is the console's own page.
        package func admitsOrigin(_ origin: String?) -> Bool {
            guard let origin, origin.lowercased().hasPrefix(scheme + "://") else { return false }
            let host = String(origin.dropFirst(scheme.count + 3))
            guard !host.contains("/") else { return false }
            return admits(host)
        }
    }

    /// The console's ``Hosts`` once its listener is bound to `boundPort`.
    package func hosts(tls: Bool, boundPort: Int) -> Hosts? {
        if let origin, let url = URLParts(origin) {
            return Hosts(scheme: url.scheme, names: [url.host], port: url.port, portOptional: false)
        }
        guard let listen, !listen.isWildcard else { return nil }
        var names: Set<String> = [listen.host.lowercased()]
        if listen.host.contains(":") { names.insert("[\(listen.host.lowercased())]") }
        if listen.isLoopback { names.formUnion(["localhost", "127.0.0.1", "[::1]"]) }
        return Hosts(scheme: tls ? "https" : "http", names: names, port: boundPort, portOptional: true)
    }

    /// A `console.origin`: scheme, host (lowercased), port (the scheme's default when absent).
    struct URLParts {
        var scheme: String
        var host: String
        var port: Int

        init?(_ text: String) {
            let lowered = text.lowercased()
            let scheme: String
            if lowered.hasPrefix("https://") {
                scheme = "https"
            } else if lowered.hasPrefix("http://") {
                scheme = "http"
            } else {
                return nil
            }
            let rest = String(lowered.dropFirst(scheme.count + 3))
            guard !rest.isEmpty, !rest.contains("/"), !rest.contains("@"), !rest.contains("?"), !rest.contains("#")
            else { return nil }
            if let colon = rest.lastIndex(of: ":"), !rest.hasSuffix("]") {
                guard let port = Int(rest[rest.index(after: colon)...]), (1...65535).contains(port) else { return nil }
                host = String(rest[..<colon])
                self.port = port
            } else {
                host = rest
                port = scheme == "https" ? 443 : 80
            }
            guard !host.isEmpty else { return nil }
            self.scheme = scheme
        }
    }

    package init() {}

    package var isEnabled: Bool { listen != nil }

    /// Reads `console`: `listen`, `session_idle_s`, `session_max_s`. `hasTLS`: whether
    /// `server.tls` is set (the console's listener shares it).
    static func read(_ node: ConfigNode?, hasTLS: Bool, _ r: ConfigReader) -> ConsoleSettings {
        var settings = ConsoleSettings()
        guard
            let m = r.mapping(
                node, at: "console",
                allowed: ["listen", "session_idle_s", "session_max_s", "elements_origin", "origin"])
        else { return settings }
        if let text = r.string(m["listen"], at: "console.listen") {
            if let (host, port) = ServiceConfiguration.parseListen(text) {
                let listen = Listen(host: host, port: port)
                if !listen.isLoopback && !hasTLS {
                    r.issue(
                        "console.listen",
                        "off loopback the console needs TLS (server.tls): its session cookie and the tokens "
                            + "signed in with would cross the network in clear",
                        m["listen"])
                }
                settings.listen = listen
            } else {
                r.issue("console.listen", "expected HOST:PORT, e.g. 127.0.0.1:8082", m["listen"])
            }
        }
        r.int(
            m["session_idle_s"], at: "console.session_idle_s", min: 5, max: 86_400, into: &settings,
            \.sessionIdleSeconds)
        r.int(
            m["session_max_s"], at: "console.session_max_s", min: 60, max: 604_800, into: &settings, \.sessionMaxSeconds
        )
        if let origin = r.string(m["elements_origin"], at: "console.elements_origin") {
            if let problem = ElementsSettings.originProblem(origin) {
                r.issue("console.elements_origin", problem, m["elements_origin"])
            } else {
                settings.elementsOrigin = origin
            }
        }
        if let origin = r.string(m["origin"], at: "console.origin") {
            // An origin as a browser serializes it (the rule elements_origin has), then its parts.
            if let problem = ElementsSettings.originProblem(origin) {
                r.issue("console.origin", problem, m["origin"])
            } else if URLParts(origin) == nil {
                r.issue(
                    "console.origin", "expected the URL operators reach the console at: http(s)://HOST[:PORT], no path",
                    m["origin"])
            } else {
                settings.origin = origin
            }
        }
        if let listen = settings.listen, listen.isWildcard, settings.origin == nil {
            r.issue(
                "console.origin",
                "console.listen is a wildcard address: set console.origin to the URL operators reach the console at "
                    + "(every request's Host is checked against it)")
        }
        if settings.sessionIdleSeconds > settings.sessionMaxSeconds {
            r.issue("console.session_idle_s", "must not exceed console.session_max_s")
        }
        return settings
    }
}
