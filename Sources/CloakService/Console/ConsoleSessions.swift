import CloakCore
import CloakCrypto
import Foundation
import Synchronization

/// The console's signed-in sessions, kept by this node in memory (docs/console.md): the browser
/// holds only a random session id in an `HttpOnly` cookie, never the API token it signed in
/// with. A session carries the console's scopes of its token (``Scope/console``), ends after
/// `console.session_idle_s` unused or `console.session_max_s` after its sign-in, and ends at once
/// when its token is revoked, expires or is re-issued (each use looks the token up again by the
/// SHA-256 it had at sign-in). A restart signs everyone out.
final class ConsoleSessions: Sendable {
    struct Session: Sendable {
        /// The signed-in token's id and SHA-256 (the directory's key for it).
        let tokenID: String
        let tokenDigest: [UInt8]
        /// What the session may do: ``Scope/console`` of the token's scopes.
        let scopes: Set<Scope>
        /// The token's scopes at the sign-in (what the sign-in's answer says it may grant; each
        /// request after reads the token's scopes as they are then: ``ConsoleGuardMiddleware``).
        let held: Set<Scope>
        /// Sent back in `X-Cloak-CSRF` on every change (``ConsoleGuardMiddleware``).
        let csrf: String
        /// Monotonic seconds of the sign-in and of the last use.
        let signedInAt: Double
        var lastUsedAt: Double
    }

    /// A session's cookie value is 32 random bytes (base64url); the table is keyed by its
    /// SHA-256, so that neither a lookup's time nor a dump of this table gives a cookie away.
    private let table = Mutex<[[UInt8]: Session]>([:])
    /// The most sessions at once; a sign-in past it ends the least recently used.
    static let capacity = 1_000
    /// The most sessions one token holds; its sign-in past it ends that token's least recently
    /// used, so one token (an integration's, say) cannot push everyone else's sessions out.
    static let perToken = 16

    let idleSeconds: Double
    let maxSeconds: Double
    let clock: @Sendable () -> Double

    init(idleSeconds: Int, maxSeconds: Int, clock: @escaping @Sendable () -> Double = ConsoleSessions.monotonicSeconds)
    {
        self.idleSeconds = Double(idleSeconds)
        self.maxSeconds = Double(maxSeconds)
        self.clock = clock
    }

    static func monotonicSeconds() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

    /// Opens a session for `token`; its cookie value and the session.
    func signIn(_ token: ServiceConfiguration.AccessToken) -> (cookie: String, session: Session) {
        let cookie = RevealSession.base64url(SecureRandom.bytes(32))
        let now = clock()
        let session = Session(
            tokenID: token.id, tokenDigest: token.sha256, scopes: token.scopes.intersection(Scope.console),
            held: token.scopes, csrf: RevealSession.base64url(SecureRandom.bytes(24)), signedInAt: now, lastUsedAt: now)
        table.withLock { table in
            Self.dropEnded(&table, now: now, idle: idleSeconds, max: maxSeconds)
            let own = table.filter { $0.value.tokenID == token.id }
            if own.count >= Self.perToken, let oldest = own.min(by: { $0.value.lastUsedAt < $1.value.lastUsedAt }) {
                table[oldest.key] = nil
            } else if table.count >= Self.capacity,
                let oldest = table.min(by: { $0.value.lastUsedAt < $1.value.lastUsedAt })
            {
                table[oldest.key] = nil
            }
            table[Digest.sha256(Array(cookie.utf8))] = session
        }
        return (cookie, session)
    }

    /// The session of `cookie` when it has not ended, marked used now; nil otherwise (an ended
    /// one is forgotten).
    func use(_ cookie: String) -> Session? {
        let key = Digest.sha256(Array(cookie.utf8))
        let now = clock()
        return table.withLock { table in
            guard var session = table[key] else { return nil }
            guard !Self.hasEnded(session, now: now, idle: idleSeconds, max: maxSeconds) else {
                table[key] = nil
                return nil
            }
            session.lastUsedAt = now
            table[key] = session
            return session
        }
    }

    /// Ends the session of `cookie` (sign-out).
    func end(_ cookie: String) {
        let key = Digest.sha256(Array(cookie.utf8))
        _ = table.withLock { $0.removeValue(forKey: key) }
    }

    /// Sessions open now (tests).
    var count: Int { table.withLock { $0.count } }

    /// Seconds until the session ends unused: the earlier of its idle and its absolute end.
    func remaining(_ session: Session) -> Int {
        let now = clock()
        return max(0, Int(min(session.lastUsedAt + idleSeconds, session.signedInAt + maxSeconds) - now))
    }

    static func hasEnded(_ s: Session, now: Double, idle: Double, max: Double) -> Bool {
        now - s.lastUsedAt >= idle || now - s.signedInAt >= max
    }

    private static func dropEnded(_ table: inout [[UInt8]: Session], now: Double, idle: Double, max: Double) {
        table = table.filter { !hasEnded($0.value, now: now, idle: idle, max: max) }
    }
}
