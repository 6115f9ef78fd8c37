/// What the API listener's router maps a method and path to; the steps ask it who may call and
/// how that caller is counted, and ``APIHandler`` answers it.
enum Endpoint: Sendable {
    case healthz, readyz, metrics, validate, formTokens, formAliases, formSend
    case createTokens, createAliases, revealMany, reveal, update, delete, keep, lookup
    case proxy, egress
    case elementsAsset, elementsSchema, elementsReveal, elementsSession, elementsNativeReveal

    /// The egress door's `Authorization` belongs to the upstream: its caller is in
    /// `Proxy-Authorization`.
    var callerInProxyAuthorization: Bool { self == .egress }

    /// Anyone may call it (browsers and apps tokenize without a token): there a token without
    /// `aliases:create` counts as no token at all, and takes from its address's bucket.
    var isOpen: Bool {
        switch self {
        case .validate, .formTokens, .formSend, .createTokens, .proxy: return true
        default: return false
        }
    }

    /// Health probes are never limited (a balancer must not take a node out because of its own
    /// checks); Elements' scripts and frame documents are static and cached: a checkout page
    /// loads several, and they must not spend its visitors' anonymous request budget. Decided by
    /// the routed endpoint, never by the decoded path (`/healthz%00x` decodes to `/healthz` and
    /// matches nothing: it is counted).
    var isRateLimited: Bool { self != .elementsAsset && self != .healthz && self != .readyz }
}
