import CloakCore
import CloakHTTP
import CloakVault

/// `GET /healthz` (the process answers) and `GET /readyz` (it takes traffic: not draining, every
/// event loop turning, the store answering).
struct HealthHandler: Sendable {
    static let healthy = HTTPResponse.json(200, Array(#"{"status":"ok"}"#.utf8), headers: HTTPResponse.noCacheHeaders)
    static let ready = HTTPResponse.json(200, Array(#"{"status":"ready"}"#.utf8), headers: HTTPResponse.noCacheHeaders)
    /// Ready, with the store's disk below `limits.disk_reserve_mib` (``DiskReserve``): reveals
    /// and deletes are served, so the node stays in rotation; what grows the store gets 507.
    static let readyBelowReserve = HTTPResponse.json(
        200, Array(#"{"status":"ready","disk":"below_reserve"}"#.utf8), headers: HTTPResponse.noCacheHeaders)
    static let draining = HTTPResponse.json(
        503, Array(#"{"status":"draining"}"#.utf8), headers: HTTPResponse.noCacheHeaders)
    /// With `Retry-After` as every 503 the store causes (``CloakError/storeUnavailable(_:)``).
    static let storeDown = HTTPResponse.json(
        503, Array(#"{"status":"store unavailable"}"#.utf8),
        headers: [("Retry-After", String(StoreError.retryAfterSeconds))] + HTTPResponse.noCacheHeaders)

    /// An event loop has stopped turning: the node must leave rotation. Names the loops (`main-0`,
    /// `egress-1`: their server and index, nothing from a request).
    static func loopStalled(_ loops: [String]) -> HTTPResponse {
        var writer = JSONWriter()
        writer.beginObject()
        writer.member("status", "event loop stalled")
        writer.member("loops", loops)
        writer.endObject()
        return .json(503, writer.takeBytes(), headers: HTTPResponse.noCacheHeaders)
    }
}
