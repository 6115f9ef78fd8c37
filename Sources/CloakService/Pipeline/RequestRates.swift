import CloakCore
import CloakHTTP
import CloakVault
import Dispatch

/// The service's request rates: one token bucket per token id, else per client address
/// (``RateLimiter``), with the limits of `limits` and the counts of refusals.
struct RequestRates: Sendable {
    let limiter: RateLimiter
    let limits: ServiceConfiguration.RateLimits
    let metrics: ServiceMetrics

    /// Past its rate (per token id, else per client address): 429 with `Retry-After`. With
    /// `anonymous` (an open endpoint, a token without `aliases:create`) the token takes from its
    /// address's anonymous bucket, like any anonymous caller. (Which requests are not counted at
    /// all is the caller's decision: ``Endpoint/RateClass``.)
    func check(client: String, identity: Identity, anonymous: Bool = false) throws(CloakError) {
        let key: RateLimiter.Key
        let limit: RateLimit
        if let token = identity.token, !anonymous {
            key = .token(token.id)
            limit = tokenLimit(token)
        } else {
            key = .client(client)
            limit = limits.anonymous
        }
        guard let wait = limiter.take(key, limit: limit, now: DispatchTime.now().uptimeNanoseconds) else { return }
        if case .token = key { metrics.rateLimited("token") } else { metrics.rateLimited("anonymous") }
        throw CloakError(
            .tooManyRequests, "too many requests; retry after \(wait) s",
            extraInfo: [("retryAfterSeconds", .int(wait))])
    }

    /// A token's rate: `limits.token`, or its own `requests_per_minute`.
    func tokenLimit(_ token: ServiceConfiguration.AccessToken) -> RateLimit {
        var limit = limits.token
        if let perMinute = token.requestsPerMinute {
            limit.requestsPerMinute = perMinute
            limit.burst = min(limit.burst, perMinute)
        }
        return limit
    }

    /// Takes `n` more requests from a token's bucket: nil when they may go, else seconds to wait.
    func chargeToken(_ token: ServiceConfiguration.AccessToken, _ n: Int) -> Int? {
        let wait = limiter.take(
            .token(token.id), limit: tokenLimit(token), now: DispatchTime.now().uptimeNanoseconds, cost: n)
        if wait != nil { metrics.rateLimited("token") }
        return wait
    }

    /// Takes `n` more requests from a client address's anonymous bucket.
    func chargeAnonymous(_ address: String, _ n: Int) -> Int? {
        let wait = limiter.take(
            .client(address), limit: limits.anonymous, now: DispatchTime.now().uptimeNanoseconds, cost: n)
        if wait != nil { metrics.rateLimited("anonymous") }
        return wait
    }
}
