import CloakCore
import CloakHTTP

/// `GET /healthz` (the process answers) and `GET /readyz` (it takes traffic: not draining).
struct HealthHandler: Sendable {
    static let healthy = HTTPResponse.json(200, Array(#"{"status":"ok"}"#.utf8))
    static let ready = HTTPResponse.json(200, Array(#"{"status":"ready"}"#.utf8))
    static let draining = HTTPResponse.json(503, Array(#"{"status":"draining"}"#.utf8))
    static let storeDown = HTTPResponse.json(503, Array(#"{"status":"store unavailable"}"#.utf8))
}
