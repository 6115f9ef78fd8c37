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
    package var routes: [Route] = []

    package init() {}

    /// `[a-z0-9_-]+`, at most 64 characters.
    static func isRouteID(_ id: String) -> Bool {
        !id.isEmpty && id.utf8.count <= 64
            && id.utf8.allSatisfy { ($0 >= 97 && $0 <= 122) || ($0 >= 48 && $0 <= 57) || $0 == 95 || $0 == 45 }
    }

    /// The route with this id.
    package func route(_ id: String) -> Route? { routes.first { $0.id == id } }
}
