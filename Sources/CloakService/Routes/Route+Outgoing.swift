import CloakCore
import CloakHTTP

extension Route {
    /// The client's headers that go upstream (and that the request's operations select in):
    /// less hop-by-hop ones, those Cloak frames itself (`Host`, `Content-Length`; `X-Route-Id` on
    /// inbound routes, where it names the route) and `Authorization` unless `keepAuthorization`.
    ///
    /// - Parameter trustedContext: the caller's trace context is taken
    ///   (``RequestContext/trustsCallerContext``): its `baggage` then goes upstream when the route
    ///   says so (``forwardBaggage``). Never without.
    func forwardedHeaders(
        _ headers: [(name: String, value: String)], keepAuthorization: Bool, trustedContext: Bool = false
    ) -> [(name: String, value: String)] {
        let framed = door == .inbound ? Self.inboundFramed : Self.egressFramed
        let keepBaggage = forwardBaggage && trustedContext
        // Names compared in place (no lowercased copy per header).
        return withoutHopByHop(headers).filter { header in
            !framed.contains { header.name.caseInsensitiveEquals($0) }
                && (keepAuthorization || !header.name.caseInsensitiveEquals("authorization"))
                // A caller's trace context never passes: Cloak sends its own when it traces.
                && !RequestTrace.isTraceHeader(header.name)
                && (keepBaggage || !header.name.caseInsensitiveEquals("baggage"))
        }
    }

    /// The headers as sent, once the operations are done: `contentType` when the body is Cloak's
    /// own (a form route's JSON), then the route's configured headers.
    func sentHeaders(_ headers: [(name: String, value: String)], contentType: String?)
        -> [(name: String, value: String)]
    {
        guard contentType != nil || !self.headers.isEmpty else { return headers }
        var out = headers
        if let contentType {
            out.removeAll { $0.name.caseInsensitiveEquals("content-type") }
            out.append(("Content-Type", contentType))
        }
        for (name, value) in self.headers {
            out.removeAll { $0.name.caseInsensitiveEquals(name) }
            out.append((name, value))
        }
        return out
    }

    /// Request headers never forwarded: Cloak frames the request (and, inbound, names the route).
    static let inboundFramed = ["host", "content-length", "x-route-id"]
    static let egressFramed = ["host", "content-length"]

    /// The request-target upstream: the upstream's path joined with what followed the route's
    /// own path (still percent-encoded as sent), and the query made safe.
    static func target(_ upstream: Upstream, rest: String, query: String?) -> String {
        var path = upstream.path
        if !rest.isEmpty { path = (path.hasSuffix("/") ? String(path.dropLast()) : path) + rest }
        return path + (query.map { "?" + HTTPSyntax.safeQuery($0) } ?? "")
    }

    /// The request to `upstream`, with the route's timeouts and trust.
    static func request(
        to upstream: Upstream, method: HTTPMethod, target: String, headers: [(name: String, value: String)],
        body: [UInt8]
    ) -> UpstreamRequest {
        var request = UpstreamRequest(
            scheme: upstream.scheme, host: upstream.host, port: upstream.port, target: target, method: method,
            headers: headers, body: body, timeoutSeconds: upstream.responseTimeoutSeconds,
            connectTimeoutSeconds: upstream.connectTimeoutSeconds, caFile: upstream.caFile)
        request.clientCertificate = upstream.clientCertificate
        request.allowPrivate = upstream.allowPrivate
        request.reuseConnection = upstream.reuse
        request.trustStamp = upstream.trustStamp
        return request
    }
}
