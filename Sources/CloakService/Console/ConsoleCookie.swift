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

    /// `headers` without the console's cookies: each `Cookie` header keeps its other pairs, and
    /// one left empty goes. Unchanged (no copy) when no `Cookie` header names them.
    static func strip(_ headers: inout [(name: String, value: String)]) {
        guard
            headers.contains(where: {
                $0.name.caseInsensitiveEquals("Cookie") && ($0.value.contains(plainName))
            })
        else { return }
        var kept: [(name: String, value: String)] = []
        for header in headers {
            guard header.name.caseInsensitiveEquals("Cookie") else {
                kept.append(header)
                continue
            }
            let pairs = header.value.split(separator: ";").filter { pair in
                let trimmed = pair.drop { $0 == " " || $0 == "\t" }
                let cookieName = trimmed.prefix { $0 != "=" }
                return cookieName != secureName && cookieName != plainName
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
                $0.name.caseInsensitiveEquals("Set-Cookie") && $0.value.contains(ConsoleCookie.plainName)
            })
        else { return }
        response.headers.removeAll { header in
            guard header.name.caseInsensitiveEquals("Set-Cookie") else { return false }
            let name = header.value.drop { $0 == " " }.prefix { $0 != "=" }
            return name == ConsoleCookie.plainName || name == ConsoleCookie.secureName
        }
    }
}
