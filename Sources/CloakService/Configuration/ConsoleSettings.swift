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
    }

    package init() {}

    package var isEnabled: Bool { listen != nil }

    /// Reads `console`: `listen`, `session_idle_s`, `session_max_s`. `hasTLS`: whether
    /// `server.tls` is set (the console's listener shares it).
    static func read(_ node: ConfigNode?, hasTLS: Bool, _ r: ConfigReader) -> ConsoleSettings {
        var settings = ConsoleSettings()
        guard
            let m = r.mapping(
                node, at: "console", allowed: ["listen", "session_idle_s", "session_max_s", "elements_origin"])
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
        if settings.sessionIdleSeconds > settings.sessionMaxSeconds {
            r.issue("console.session_idle_s", "must not exceed console.session_max_s")
        }
        return settings
    }
}
