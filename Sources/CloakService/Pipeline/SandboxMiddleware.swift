import CloakHTTP

/// With Elements on, Cloak's origin holds the frames that hold card values. An upstream's answer
/// through a route (any type, any content: Cloak did not write it) must never run as a document
/// of that origin and reach into them: a sandboxed, unframeable document without scripts, should
/// a browser be sent to it. Cloak's own answers are JSON or text it writes itself, and go
/// without (two headers cost 5% of a request: Benchmarks/README.md).
struct SandboxMiddleware: Middleware {
    /// Elements on (`elements.allowed_origins` not empty): only then do the headers matter.
    var enabled = true

    static let policy = "sandbox; default-src 'none'; frame-ancestors 'none'"

    /// The doors whose answers come from an upstream: `/proxy/…` routes and `/egress/…`.
    static func forwardsUpstreamAnswers(_ template: String) -> Bool {
        template.hasPrefix("/proxy/") || template.hasPrefix("/egress/")
    }

    func response(_ response: inout HTTPResponse, _ context: RequestContext) {
        guard enabled, Self.forwardsUpstreamAnswers(context.template) else { return }
        response.headers.append(("Content-Security-Policy", Self.policy))
        response.headers.append(("X-Content-Type-Options", "nosniff"))
    }
}
