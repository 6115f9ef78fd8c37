import CloakCore
import CloakHTTP
import CloakVault
import Dispatch

/// The vault as one request's handlers use it: every completion runs on the request's loop
/// thread. Encoding the answer, counting it in metrics and writing its log line are then loop
/// work, spread over the loops, and the vault thread does nothing but read, write and commit.
/// (A completion the vault calls on the loop itself, such as a cached alias, runs at once.)
struct VaultClient: Sendable {
    let vault: Vault
    /// The request's loop; nil outside a server (in-process callers), where completions run
    /// wherever the vault calls them.
    let loop: LoopHandle?
    /// The limits a token holder's creates pass first (nil: anonymous callers and in-process use).
    var admission: CreateAdmission? = nil
    /// Told when an anonymous request found its bucket's share taken (the metric).
    var onBucketFull: (@Sendable (AliasFormatName) -> Void)? = nil
    /// Takes `n` more requests from an anonymous caller's rate bucket (its address's): nil when it
    /// may go, else seconds to wait. Token holders pay per value through their admission.
    var chargeAnonymous: (@Sendable (_ n: Int) -> Int?)? = nil
    /// Told why a reveal found the vault unavailable (a record under a retired key version, a
    /// record that fails authentication): the reason names versions and operations, never values.
    var onUnavailable: (@Sendable (String) -> Void)? = nil

    var settings: Vault.Settings { vault.settings }

    /// This client for values redacted from an upstream's answer (see ``CreateAdmission/answering``).
    var answering: VaultClient {
        var copy = self
        copy.admission = admission?.answering
        return copy
    }

    func createAliases(
        _ requests: [AliasRequest], caller: AliasCaller,
        completion: @escaping @Sendable (Result<[RevealedRecord], VaultError>) -> Void
    ) {
        if !caller.anonymous, let admission, let refusal = admission.admit(requests, vault: vault) {
            return completion(.failure(refusal))
        }
        // An anonymous caller pays one request per value too, whatever the door (/tokens, a form,
        // a route's redactions): 100 values cost 100, so one address cannot fill a card's
        // anonymous share in a few requests.
        if caller.anonymous, requests.count > 1, let wait = chargeAnonymous?(requests.count - 1) {
            return completion(
                .failure(
                    .refused(
                        retryAfter: wait,
                        reason:
                            "too many values for this address's rate (each value counts as a request)")))
        }
        vault.createAliases(requests, caller: caller) { [onBucketFull] result in
            if case let .failure(.bucketFull(format, _)) = result { onBucketFull?(format) }
            onLoop { completion(result) }
        }
    }

    func lookup(_ values: [String], completion: @escaping @Sendable (Result<[RevealedRecord?], VaultError>) -> Void) {
        vault.lookup(values) { result in onLoop { completion(result) } }
    }

    func reveal(
        _ aliases: [String], completion: @escaping @Sendable (Result<[String: RevealedRecord], VaultError>) -> Void
    ) {
        vault.reveal(aliases) { [onUnavailable] result in
            if case let .failure(.unavailable(reason)) = result { onUnavailable?(reason) }
            onLoop { completion(result) }
        }
    }

    func delete(_ alias: String, completion: @escaping @Sendable (Result<Void, VaultError>) -> Void) {
        vault.delete(alias) { result in onLoop { completion(result) } }
    }

    func update(
        _ alias: String, classifiers: [String]?, metadata: [String: String]?, ttlSeconds: Int?,
        completion: @escaping @Sendable (Result<Void, VaultError>) -> Void
    ) {
        vault.update(alias, classifiers: classifiers, metadata: metadata, ttlSeconds: ttlSeconds) { result in
            onLoop { completion(result) }
        }
    }

    func setClassifiers(
        _ classifiers: [String], alias: String, completion: @escaping @Sendable (Result<Void, VaultError>) -> Void
    ) {
        vault.setClassifiers(classifiers, alias: alias) { result in onLoop { completion(result) } }
    }

    func ping(completion: @escaping @Sendable (Result<Void, VaultError>) -> Void) {
        vault.ping { result in onLoop { completion(result) } }
    }

    private func onLoop(_ work: @escaping @Sendable () -> Void) {
        if let loop { loop.execute(work) } else { work() }
    }
}

/// What a token holder's create passes before the vault: its rate bucket is charged one request
/// per value (the request itself paid for the first), and each bucket it aliases is held to
/// `limits.bucket_values_per_hour` distinct values (``BucketGuessLimiter``). Values redacted from
/// an upstream's answer (``answering``) are counted and alerted on only: the upstream has acted,
/// and refusing then would lose its answer.
struct CreateAdmission: Sendable {
    let tokenID: String
    let limiter: BucketGuessLimiter
    let valuesPerHour: Int
    /// Takes `n` more from the token's rate bucket: nil when it may go, else seconds to wait.
    let charge: @Sendable (_ n: Int) -> Int?
    /// Told of a bucket past the limit (metric and audit line), with whether it was refused.
    let refused: @Sendable (AliasFormatName, _ enforced: Bool) -> Void
    var mode = BucketGuessLimiter.Mode.enforce

    /// The same limits for values redacted from an upstream's answer: no charge, no refusal.
    var answering: CreateAdmission {
        var copy = self
        copy.mode = .countOnly
        return copy
    }

    /// nil when the request may go on, else the refusal to answer (nothing is written).
    func admit(_ requests: [AliasRequest], vault: Vault) -> VaultError? {
        if mode == .enforce, requests.count > 1, let wait = charge(requests.count - 1) {
            return .refused(
                retryAfter: wait, reason: "too many values for this token's rate (each value counts as a request)")
        }
        let buckets = vault.guessBuckets(requests)
        guard
            let refusal = limiter.admit(token: tokenID, buckets, limit: valuesPerHour, now: LoopClock.now(), mode: mode)
        else { return nil }
        refused(refusal.format, mode == .enforce)
        guard mode == .enforce else { return nil }
        return .refused(
            retryAfter: refusal.retryAfter,
            reason:
                "this token aliased \(valuesPerHour) distinct \(refusal.format.rawValue) values of one bucket (kept characters "
                + "and shape) within an hour (limits.bucket_values_per_hour)")
    }
}

/// The monotonic clock in nanoseconds.
enum LoopClock {
    static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }
}
