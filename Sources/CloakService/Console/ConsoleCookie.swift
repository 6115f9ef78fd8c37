import CloakCore
import CloakHTTP

/// The console's session cookie: `__Host-cloak_console` on a TLS listener (`Secure`, host-only,
/// `Path=/`), `cloak_console` on a plain loopback one; always `HttpOnly; SameSite=Strict`.
/// Browsers do not keep cookies apart by port, so the API listener and the egress door remove
/// both names from every request before anything can forward it (``ConsoleCookieMiddleware``).
enum ConsoleCookie {
    static let secureName = "__Host-cloak_console"
    static let plainName = "cloak_console"

    static func name(tls: Bool) -> String { tls ? secureName : plainName }

    /// The `Set-Cookie` that opens a session of `maxAge` seconds.
    static func setting(_ value: String, tls: Bool, maxAge: Int) -> String {
        "\(name(tls: tls))=\(value); Path=/; Max-Age=\(maxAge); HttpOnly; SameSite=Strict" + (tls ? "; Secure" : "")
    }

    /// The `Set-Cookie` that removes it (sign-out, an ended session).
    static func clearing(tls: Bool) -> String {
        "\(name(tls: tls))=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict" + (tls ? "; Secure" : "")
    }

    /// The value of the cookie `name` when the request carries exactly one: two (one planted
    /// by a page of another port of the host, say) are no session at all, never a guess at
    /// which is the browser's own.
    static func only(in headers: [(name: String, value: String)], named name: String) -> String? {
        var found: String?
        for header in headers where header.name.caseInsensitiveEquals("Cookie") {
            for pair in header.value.split(separator: ";") {
                let trimmed = pair.drop { $0 == " " || $0 == "\t" }
                guard let equals = trimmed.firstIndex(of: "="), trimmed[..<equals] == name else { continue }
                guard found == nil else { return nil }
                found = String(trimmed[trimmed.index(after: equals)...])
            }
        }
        return found
    }

    /// Whether `name`, as a browser reads a cookie's name (RFC 6265 §5.2: space and tab around
    /// it trimmed), is one of the console's; case aside, which no browser relies on.
    static func isConsoles(_ name: Substring) -> Bool {
        let trimmed = name.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed()
        let text = String(trimmed)
        return text.caseInsensitiveEquals(plainName) || text.caseInsensitiveEquals(secureName)
    }

    /// Whether a `Set-Cookie` value would set one of the console's cookies in a browser: its
    /// name-value pair (up to the first `;`) with its name trimmed (`cloak_console =x` sets
    /// `cloak_console`), or a pair without a name (`=cloak_console=x`, or no `=` at all) whose
    /// value a browser sends back as `cloak_console=x` (RFC 6265bis §5.6, as Chromium does).
    static func sets(_ setCookie: String) -> Bool {
        let pair = setCookie.prefix { $0 != ";" }
        guard let equals = pair.firstIndex(of: "=") else {
            return isConsoles(pair.prefix { $0 != "=" })
        }
        let name = pair[..<equals]
        if isConsoles(name) { return true }
        // A nameless cookie: its value is what the browser sends, read as `name=value`.
        guard name.allSatisfy({ $0 == " " || $0 == "\t" }) else { return false }
        let value = pair[pair.index(after: equals)...]
        return isConsoles(value.prefix { $0 != "=" })
    }

    /// `headers` without the console's cookies: each `Cookie` header keeps its other pairs, and
    /// one left empty goes. Unchanged (no copy) when no `Cookie` header names them.
    static func strip(_ headers: inout [(name: String, value: String)]) {
        guard
            headers.contains(where: {
                $0.name.caseInsensitiveEquals("Cookie") && $0.value.lowercased().contains(plainName)
            })
        else { return }
        var kept: [(name: String, value: String)] = []
        for header in headers {
            guard header.name.caseInsensitiveEquals("Cookie") else {
                kept.append(header)
                continue
            }
            let pairs = header.value.split(separator: ";").filter { pair in
                !isConsoles(pair.prefix { $0 != "=" })
            }
            if !pairs.isEmpty {
                kept.append((header.name, pairs.map { $0.drop { $0 == " " || $0 == "\t" } }.joined(separator: "; ")))
            }
        }
        headers = kept
    }
}

/// Removes the console's session cookie from every request of a door that is not the console's
/// (the API listener, the egress door): a route forwards a browser's cookies upstream, and the
/// console's must never go with them. It is also never accepted there.
struct ConsoleCookieMiddleware: Middleware {
    func request(_ context: inout RequestContext) throws(CloakError) -> HTTPResponse? {
        ConsoleCookie.strip(&context.request.headers)
        return nil
    }

    /// Nor may an upstream's answer set it: a route passes `Set-Cookie` back to the browser, and
    /// a planted console cookie would sign the operator into a session of the upstream's choice.
    func response(_ response: inout HTTPResponse, _ context: RequestContext) {
        guard
            response.headers.contains(where: {
                $0.name.caseInsensitiveEquals("Set-Cookie") && $0.value.lowercased().contains(ConsoleCookie.plainName)
            })
        else { return }
        response.headers.removeAll { $0.name.caseInsensitiveEquals("Set-Cookie") && ConsoleCookie.sets($0.value) }
    }
}
