import CloakCore
import CloakHTTP

/// `egress`: routes that reveal aliases on the way out to a payment provider, through the
/// transform door (`/egress/{route}/…` on the main listener) or the forward-proxy door
/// (`egress.listen`, CONNECT with TLS interception).
package struct EgressSettings: Sendable {
    /// The forward-proxy door's address; nil: no forward proxy.
    package var listen: (host: String, port: Int)?
    /// The CA that signs the door's per-host certificates: made on first run (key 0600).
    package var caCertificate = "data/egress-ca.pem"
    package var caKey = "data/egress-ca-key.pem"
    package var routes: [EgressRoute] = []

    package init() {}

    /// `[a-z0-9_-]+`, at most 64 characters.
    static func isRouteID(_ id: String) -> Bool {
        !id.isEmpty && id.utf8.count <= 64
            && id.utf8.allSatisfy { ($0 >= 97 && $0 <= 122) || ($0 >= 48 && $0 <= 57) || $0 == 95 || $0 == 45 }
    }

    /// The route with this id.
    package func route(_ id: String) -> EgressRoute? { routes.first { $0.id == id } }
}

/// One egress route: where it goes, which paths and methods it allows, what it reveals and
/// redacts, and how it trusts (and is trusted by) its upstream.
package struct EgressRoute: Sendable {
    package var id: String
    package var scheme: UpstreamRequest.Scheme
    package var host: String
    package var port: Int
    package var paths: [PathGlob]
    package var methods: [String]
    package var requestOperations: [ServiceConfiguration.RouteOperation]
    package var responseOperations: [ServiceConfiguration.RouteOperation]
    /// PEM file of CAs trusted for the upstream; nil: the system store.
    package var caFile: String?
    /// PEM files of Cloak's certificate and key for mutual TLS with the upstream.
    package var clientCertificate: UpstreamRequest.ClientCertificate?
    /// Whether the upstream may be (or resolve to) loopback, private or link-local, or be an IP literal.
    package var allowPrivate: Bool
    /// More selected aliases in one message: 400 (1002).
    package var maxAliases: Int
    package var connectTimeoutSeconds: Double
    package var responseTimeoutSeconds: Double

    /// Whether the route lets `method` reach `path` (as sent, percent-encoded).
    package func allows(method: String, path: String) -> Bool {
        methods.contains(method) && paths.contains { $0.matches(path) }
    }
}
