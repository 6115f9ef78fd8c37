import CloakHTTP

extension HTTPResponse {
    /// `Cache-Control: no-store`, for an answer that holds a secret (a token `POST /admin/tokens`
    /// made) or revealed values (`GET /aliases/{alias}`, `GET /aliases?q=`): no browser, proxy or
    /// client cache may keep it.
    static let noStoreHeaders: [(name: String, value: String)] = [("Cache-Control", "no-store")]

    /// `Cache-Control: no-cache`, for answers about the node now (`/healthz`, `/readyz`,
    /// `/metrics`): a cache may keep them, but must ask again before each use.
    static let noCacheHeaders: [(name: String, value: String)] = [("Cache-Control", "no-cache")]
}
