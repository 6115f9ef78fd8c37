/// `elements`: which pages may embed Cloak Elements' frames (docs/elements.md).
///
/// Deny by default: with no allowed origin every `/elements/*` path answers 404.
package struct ElementsSettings: Sendable, Equatable {
    /// `elements.allowed_origins`: exact origins (`https://shop.example`) whose pages may embed
    /// the frames; the frames' CSP `frame-ancestors` lists exactly these.
    package var allowedOrigins: [String] = []
    /// `elements.font_origins`: origins a field's `fonts` stylesheets (and their font files) may
    /// come from; they join the frames' `style-src` and `font-src`.
    package var fontOrigins: [String] = []
    /// `elements.native`: the form schemas and native reveals (`POST /elements/v1/native/reveal`)
    /// answer clients that send no `Origin` (apps: CloakCollect), whatever `allowed_origins` holds.
    package var native = false

    package init(allowedOrigins: [String] = [], fontOrigins: [String] = [], native: Bool = false) {
        self.allowedOrigins = allowedOrigins
        self.fontOrigins = fontOrigins
        self.native = native
    }

    /// Web pages may embed the frames.
    package var isEnabled: Bool { !allowedOrigins.isEmpty }

    /// Reveal sessions may be minted (for pages, apps or both).
    package var mintsSessions: Bool { isEnabled || native }

    /// Whether a request may read a form's schema: a page of an allowed origin (the frames), or,
    /// with `native`, a client that sends no `Origin` (a browser always sends one on the frames'
    /// requests, so a page cannot pass as an app).
    package func admitsSchemaRequest(origin: String?) -> Bool { isEnabled || (native && origin == nil) }

    /// Why `text` is not an origin as a browser serializes one (`scheme://host[:port]`: http or
    /// https, lower case, no path, query, fragment, user or default port), or nil when it is.
    /// An origin written any other way would never equal the `Origin` a browser sends, and a
    /// wildcard or a path would widen a CSP source list beyond what the operator meant.
    package static func originProblem(_ text: String) -> String? {
        let scheme: String
        if text.hasPrefix("https://") {
            scheme = "https"
        } else if text.hasPrefix("http://") {
            scheme = "http"
        } else {
            return "expected an origin such as https://shop.example (http or https)"
        }
        let rest = text.dropFirst(scheme.count + 3)
        guard !rest.isEmpty else { return "the origin has no host" }
        guard
            rest.utf8.allSatisfy({ b in
                (b >= 97 && b <= 122) || (b >= 48 && b <= 57) || b == 45 || b == 46 || b == 58 || b == 91 || b == 93
            })
        else {
            return "an origin is lower-case scheme://host[:port] only: no path, query, wildcard, user or upper case"
        }
        var host = Substring(rest)
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { return "an IPv6 host needs its closing ]" }
            host = rest[...close]
            let after = rest[rest.index(after: close)...]
            if !after.isEmpty { return portProblem(after, scheme: scheme) }
            return nil
        }
        if let colon = rest.firstIndex(of: ":") {
            host = rest[..<colon]
            if let problem = portProblem(rest[colon...], scheme: scheme) { return problem }
        }
        guard !host.isEmpty, !host.hasPrefix("."), !host.hasSuffix("."), !host.contains("..") else {
            return "the origin's host is not a host name"
        }
        return nil
    }

    private static func portProblem(_ suffix: Substring, scheme: String) -> String? {
        guard suffix.hasPrefix(":"), let port = Int(suffix.dropFirst()), (1...65535).contains(port),
            String(port) == suffix.dropFirst()
        else { return "the origin's port is not a number from 1 to 65535" }
        if (scheme == "https" && port == 443) || (scheme == "http" && port == 80) {
            return "browsers leave the default port out of an origin: drop :\(port)"
        }
        return nil
    }
}
