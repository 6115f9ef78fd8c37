import CloakCore
import CloakHTTP
import CloakJobs
import CloakVault
import Dispatch
import Tracing

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
    /// A token holder's `bucket_values_per_hour` for lookups (see ``LookupAdmission``).
    var lookupValuesPerHour: Int? = nil
    /// Told when an anonymous request found its bucket's share taken (the metric).
    var onBucketFull: (@Sendable (AliasFormatName) -> Void)? = nil
    /// Takes `n` more requests from an anonymous caller's rate bucket (its address's): nil when it
    /// may go, else seconds to wait. Token holders pay per value through their admission.
    var chargeAnonymous: (@Sendable (_ n: Int) -> Int?)? = nil
    /// Told why a reveal found the vault unavailable (a record under a retired key version, a
    /// record that fails authentication): the reason names versions and operations, never values.
    var onUnavailable: (@Sendable (String) -> Void)? = nil
    /// The request's span, when tracing is on: each vault call is a child span.
    var trace: RequestTrace? = nil
    /// The node's BIN table: a card number's new record keeps its attributes (issue 48).
    var bins: BinTable? = nil
    /// The request's audited outcome: a change's events commit with the change (``VaultAuditing``).
    var audit: Outcome? = nil

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
        let (completion, call) = traced("create", count: requests.count, completion)
        let requests = bins.map { table in requests.map { CardAttributes.stored(on: $0, from: table) } } ?? requests
        var caller = caller
        if !caller.anonymous, let admission {
            if let refusal = admission.admit(requests, vault: vault) { return completion(.failure(refusal)) }
            if caller.mayReveal, !admission.answersStoredFacts(requests, vault: vault) {
                caller = AliasCaller(mayReveal: false, anonymous: false)
            }
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
        serving(call, audited: true) {
            vault.createAliases(requests, caller: caller) { [onBucketFull] result in
                if case let .failure(.bucketFull(format, _)) = result { onBucketFull?(format) }
                onLoop { completion(result) }
            }
        }
    }

    /// Looks values up; a token holder's lookup passes its ``LookupAdmission`` first (per-value
    /// charge, misses held to the bucket limit).
    func lookup(_ values: [String], completion: @escaping @Sendable (Result<[RevealedRecord?], VaultError>) -> Void) {
        let (completion, call) = traced("lookup", count: values.count, completion)
        serving(call) {
            guessing(values, completion: completion, found: { $0.map { $0 != nil } }) { done in
                vault.lookup(values, completion: done)
            }
        }
    }

    /// Reveals several aliases a caller names at once (`GET /aliases?q=`): a list of guessed
    /// aliases is a lookup too, so it passes the same admission (an FPE alias keeps its card's
    /// BIN and last four: a miss counts in that bucket).
    ///
    /// `judge` (a token's access policies, issue 77) decides, inside the reveal's job, what the
    /// caller sees of each record found: one it hides counts as the miss it answers as.
    func revealGuessing(
        _ aliases: [String], judge: RevealJudge? = nil,
        completion: @escaping @Sendable (Result<[String: RevealedRecord], VaultError>) -> Void
    ) {
        let (completion, call) = traced("reveal", count: aliases.count, completion)
        serving(call, audited: true) {
            guessing(aliases, completion: completion, found: { found in aliases.map { found[$0] != nil } }) { done in
                vault.reveal(aliases, judge: judge) { [onUnavailable] result in
                    if case let .failure(.unavailable(reason)) = result { onUnavailable?(reason) }
                    done(result)
                }
            }
        }
    }

    /// Runs `ask` under the token's ``LookupAdmission`` (none for in-process callers): refused
    /// before the vault when past a limit; afterwards the values found are given back.
    private func guessing<T: Sendable>(
        _ values: [String], completion: @escaping @Sendable (Result<T, VaultError>) -> Void,
        found: @escaping @Sendable (T) -> [Bool],
        ask: (_ done: @escaping @Sendable (Result<T, VaultError>) -> Void) -> Void
    ) {
        guard let create = admission, let limit = lookupValuesPerHour else {
            return ask { result in onLoop { completion(result) } }
        }
        let admission = LookupAdmission(create: create, valuesPerHour: limit)
        let vault = self.vault
        let pass = admission.admit(values, vault: vault)
        if case let .refused(refusal) = pass { return completion(.failure(refusal)) }
        ask { result in
            // A failed request answered nothing: no value counts.
            let hits = (try? result.get()).map(found) ?? Array(repeating: true, count: values.count)
            admission.settle(pass, values: values, found: hits, vault: vault)
            onLoop { completion(result) }
        }
    }

    /// Which of `aliases` are live aliases (``Vault/liveAliases(_:completion:)``): nothing is opened.
    func liveAliases(_ aliases: [String], completion: @escaping @Sendable (Result<Set<String>, VaultError>) -> Void) {
        let (completion, call) = traced("alias check", count: aliases.count, completion)
        serving(call) {
            vault.liveAliases(aliases) { [onUnavailable] result in
                if case let .failure(.unavailable(reason)) = result { onUnavailable?(reason) }
                onLoop { completion(result) }
            }
        }
    }

    func reveal(
        _ aliases: [String], completion: @escaping @Sendable (Result<[String: RevealedRecord], VaultError>) -> Void
    ) {
        let (completion, call) = traced("reveal", count: aliases.count, completion)
        serving(call, audited: true) {
            vault.reveal(aliases) { [onUnavailable] result in
                if case let .failure(.unavailable(reason)) = result { onUnavailable?(reason) }
                onLoop { completion(result) }
            }
        }
    }

    /// Deletes an alias (`DELETE /aliases/{alias}`): held like a reveal (``changingGuessed(_:completion:change:)``).
    func delete(_ alias: String, completion: @escaping @Sendable (Result<Void, VaultError>) -> Void) {
        let (completion, call) = traced("delete", count: 1, completion)
        serving(call, audited: true) {
            changingGuessed(alias, completion: completion) { done in vault.delete(alias, completion: done) }
        }
    }

    /// Changes an alias's record (`PUT /aliases/{alias}`): held like a reveal
    /// (``changingGuessed(_:completion:change:)``).
    func update(
        _ alias: String, classifiers: [String]?, metadata: [String: String]?, ttlSeconds: Int?,
        completion: @escaping @Sendable (Result<Void, VaultError>) -> Void
    ) {
        let (completion, call) = traced("update", count: 1, completion)
        serving(call, audited: true) {
            changingGuessed(alias, completion: completion) { done in
                vault.update(
                    alias, classifiers: classifiers, metadata: metadata, ttlSeconds: ttlSeconds, completion: done)
            }
        }
    }

    /// Runs `change` on one alias a caller names under the token's ``LookupAdmission``, as
    /// ``revealGuessing(_:completion:)`` does: the answer (done, or 404) says whether the alias
    /// is live, so an alias not found counts as a guess in its bucket (an FPE alias keeps its
    /// card's BIN and last four), and past the limit the request is refused before the vault,
    /// hit or miss (a 429 for misses and a 204 for the live alias would name it).
    private func changingGuessed(
        _ alias: String, completion: @escaping @Sendable (Result<Void, VaultError>) -> Void,
        change: (_ done: @escaping @Sendable (Result<Void, VaultError>) -> Void) -> Void
    ) {
        guessing(
            [alias],
            completion: { (result: Result<Bool, VaultError>) in
                completion(
                    result.flatMap { found -> Result<Void, VaultError> in found ? .success(()) : .failure(.notFound) })
            },
            found: { [$0] }
        ) { done in
            change { result in
                switch result {
                case .success: done(.success(true))
                case .failure(.notFound): done(.success(false))
                case let .failure(error): done(.failure(error))
                }
            }
        }
    }

    func setClassifiers(
        _ classifiers: [String], alias: String, completion: @escaping @Sendable (Result<Void, VaultError>) -> Void
    ) {
        serving(nil, audited: true) {
            vault.setClassifiers(classifiers, alias: alias) { result in onLoop { completion(result) } }
        }
    }

    func ping(completion: @escaping @Sendable (Result<Void, VaultError>) -> Void) {
        vault.ping { result in onLoop { completion(result) } }
    }

    /// `completion` wrapped in a child span of the request's, named `vault <operation>`, with the
    /// number of values or aliases in the call; and that span as the trace of the jobs the call
    /// queues (``serving(_:_:)``), when the exporter will send it. Without tracing: `completion`
    /// itself, and no trace.
    func traced<T: Sendable>(
        _ operation: String, count: Int, _ completion: @escaping @Sendable (Result<T, VaultError>) -> Void
    ) -> (@Sendable (Result<T, VaultError>) -> Void, VaultCallTrace?) {
        guard let trace else { return (completion, nil) }
        let span = trace.child("vault " + operation, kind: .client)
        span.set("cloak.vault.items", count)
        let ended: @Sendable (Result<T, VaultError>) -> Void = { result in
            if case .failure = result { span.setStatus(SpanStatus(code: .error)) }
            span.end()
            completion(result)
        }
        return (ended, span.isRecording ? VaultCallTrace(tracer: trace.tracer, span: span) : nil)
    }

    /// Makes the vault call `call` with `trace` as the trace of every job it queues
    /// (``VaultTracing/current``, read on this thread while `call` runs): the executor batch that
    /// serves them gets its span (``VaultCallTrace``). Without a trace, `call` alone.
    ///
    /// - Parameter audited: the call changes the store: its jobs carry the request's ``audit``
    ///   outcome, and the events they note commit with them (``VaultAuditing/current``).
    func serving(_ trace: VaultCallTrace?, audited: Bool = false, _ call: () -> Void) {
        if audited, let audit {
            VaultAuditing.current.withValue(audit) {
                if let trace { VaultTracing.current.withValue(trace, operation: call) } else { call() }
            }
        } else if let trace {
            VaultTracing.current.withValue(trace, operation: call)
        } else {
            call()
        }
    }

    func onLoop(_ work: @escaping @Sendable () -> Void) {
        if let loop { loop.execute(work) } else { work() }
    }
}

/// What a token holder's create passes before the vault: its rate bucket is charged one request
/// per value (the request itself paid for the first), and each bucket it aliases is held to
/// `limits.bucket_values_per_hour` distinct values (``BucketGuessLimiter``), unless the token may
/// reveal (it gains nothing by aliasing candidates) or its own entry sets another limit. Values
/// redacted from an upstream's answer (``answering``) are counted and alerted on only: the
/// upstream has acted, and refusing then would lose its answer.
struct CreateAdmission: ImportAdmission {
    /// Whose guesses these are (``ServiceConfiguration/AccessToken/guessKey``): a minted token's count
    /// as its minter's.
    let account: String
    /// The token that presented the request (its id): the one held to the limiter's bucket cap.
    let presenter: String
    let limiter: BucketGuessLimiter
    /// nil: no bucket limit on this token's creates (it may reveal; see ``answersStoredFacts(_:vault:)``).
    let valuesPerHour: Int?
    /// The limit a lookup (and an exempt token's create answers) is held to.
    var guessLimit: Int = 30
    /// Takes `n` more from the token's rate bucket: nil when it may go, else seconds to wait.
    let charge: @Sendable (_ n: Int) -> Int?
    /// Told of a refusal past a limit (metric and audit line), with whether it was enforced.
    let refused: @Sendable (BucketGuessLimiter.Refusal, _ enforced: Bool) -> Void
    var mode = BucketGuessLimiter.Mode.enforce
    /// `limits.guess_memory_mib`, in bytes: what all accounts' windows may hold.
    var memoryBudget = BucketGuessLimiter.defaultMemoryBudget

    /// The same limits for values redacted from an upstream's answer, charged to the token
    /// that presented the request: each value a unit of its rate (the request paid for none of
    /// them), each new one on its cap and the node's budget. Past the bucket limit a value is
    /// only reported (the upstream has acted); past the rate, the cap or the budget the answer
    /// is refused (the door fails closed: 502, nothing of the answer sent), so that no token
    /// spends the room every other token's new values need (review V, item 1).
    var answering: CreateAdmission {
        var copy = self
        copy.mode = .report
        return copy
    }

    /// nil when the request may go on, else the refusal to answer (nothing is written).
    func admit(_ requests: [AliasRequest], vault: Vault) -> VaultError? {
        switch mode {
        case .enforce: if let refusal = chargeExtra(requests.count) { return refusal }
        case .report: if let refusal = charge(values: requests.count) { return refusal }
        case .reserved: break
        }
        guard let valuesPerHour else { return nil }
        let buckets = vault.guessBuckets(requests)
        guard
            let refusal = limiter.admit(
                token: account, presenter: presenter, buckets, limit: valuesPerHour, now: LoopClock.now(), mode: mode,
                memoryBudget: memoryBudget)
        else { return nil }
        // Reported past the bucket limit; refused past it when enforcing, and past the cap or
        // the budget in every mode (nothing was recorded then).
        let enforced: Bool =
            if case .valuesPerBucket = refusal.limit { mode == .enforce } else { true }
        refused(refusal, enforced)
        guard enforced else { return nil }
        return Self.guessRefusal(refusal, valuesPastLimit: pastLimit(refusal, valuesPerHour))
    }

    /// Why a value past `limits.bucket_values_per_hour` is refused.
    private func pastLimit(_ refusal: BucketGuessLimiter.Refusal, _ valuesPerHour: Int) -> String {
        "this token aliased \(valuesPerHour) distinct \(refusal.format.rawValue) values of one bucket (kept characters "
            + "and shape) within an hour (limits.bucket_values_per_hour)"
    }

    /// The 429 for a refusal of the ``BucketGuessLimiter``, naming the limit that refused:
    /// `valuesPastLimit` when it was `limits.bucket_values_per_hour`, else the bucket cap.
    static func guessRefusal(_ refusal: BucketGuessLimiter.Refusal, valuesPastLimit reason: String) -> VaultError {
        switch refusal.limit {
        case .valuesPerBucket:
            return .refused(retryAfter: refusal.retryAfter, reason: reason)
        case let .buckets(cap):
            return .refused(
                retryAfter: refusal.retryAfter,
                reason:
                    "this token has counted \(cap) values within an hour, the most one token may hold; a new "
                    + "value waits until its oldest leaves the hour")
        case let .memory(mib):
            return .refused(
                retryAfter: refusal.retryAfter,
                reason:
                    "the values this node counts against guessing hold \(mib) MiB (limits.guess_memory_mib); a value "
                    + "that needs more waits until older ones leave the hour")
        }
    }

    /// An import job's row (``RowAdmission``): the token's cap or the node's memory for guesses
    /// makes the job wait; a bucket past its limit refuses the row.
    func admitRow(_ requests: [AliasRequest], vault: Vault) -> RowAdmission {
        guard let valuesPerHour else { return .admitted }
        let buckets = vault.guessBuckets(requests)
        guard
            let refusal = limiter.admit(
                token: account, presenter: presenter, buckets, limit: valuesPerHour, now: LoopClock.now(), mode: mode,
                memoryBudget: memoryBudget)
        else { return .admitted }
        if case .valuesPerBucket = refusal.limit {
            refused(refusal, true)
            return .refused(Self.guessRefusal(refusal, valuesPastLimit: pastLimit(refusal, valuesPerHour)))
        }
        return .full(retryAfter: refusal.retryAfter)
    }

    /// Whether an exempt token's create (one that may reveal, with no limit of its own) may be
    /// answered with the stored record's facts. Such a create is never refused, but its answer
    /// says whether each value was stored before, which is a lookup: past ``guessLimit`` distinct
    /// values of one bucket in the hour, the answer is the one a token without `aliases:reveal`
    /// gets (the aliases asked for, the same whether the value was stored before or not).
    func answersStoredFacts(_ requests: [AliasRequest], vault: Vault) -> Bool {
        guard valuesPerHour == nil, mode == .enforce else { return true }
        // Reported, never refused; past the token's cap or the node's budget nothing is recorded
        // (review V, item 1) and the answer omits the facts as past the limit.
        let over = limiter.admit(
            token: account, presenter: presenter, vault.guessBuckets(requests), limit: guessLimit,
            now: LoopClock.now(), mode: .report, memoryBudget: memoryBudget)
        return over == nil
    }

    /// Charges the token's rate for every value after the first (the request paid for it).
    func chargeExtra(_ count: Int) -> VaultError? {
        charge(values: count - 1)
    }

    /// Charges the token's rate for `count` values: nil when it may go on, else the refusal.
    func charge(values count: Int) -> VaultError? {
        guard count > 0, let wait = charge(count) else { return nil }
        return .refused(
            retryAfter: wait, reason: "too many values for this token's rate (each value counts as a request)")
    }
}

/// What a lookup (`POST /aliases/lookup`) passes before the vault: one unit of the token's rate
/// per value, and every value counted in its guess buckets (a card's BIN, last four and length;
/// a short number's last four and length) against the token's `bucket_values_per_hour`, reveal
/// holders included. The reservation is taken before the vault answers (so concurrent lookups
/// cannot pass it together); values that were found are given back afterwards: only a value the
/// vault does not hold is a guess.
struct LookupAdmission: Sendable {
    let create: CreateAdmission
    let valuesPerHour: Int

    /// How a request passed: refused (nothing is asked), on the unnamed path (no bucket worked
    /// out: the token's windows leave room for every value to miss), or with its values
    /// reserved in their buckets.
    enum Pass: Sendable {
        case refused(VaultError)
        case unnamed
        case named([[GuessBucket]])
    }

    /// The request's ``Pass``: its rate first (one request per value), then the unnamed path
    /// when the token's windows leave room, else each value reserved in its buckets.
    func admit(_ values: [String], vault: Vault) -> Pass {
        if let refusal = create.chargeExtra(values.count) { return .refused(refusal) }
        let now = LoopClock.now()
        if create.limiter.reserveUnnamed(token: create.account, count: values.count, limit: valuesPerHour, now: now) {
            return .unnamed
        }
        let perValue = values.map { vault.guessBuckets([AliasRequest(value: $0, format: .UUID, storage: .persistent)]) }
        let (refusal, recorded) = create.limiter.admitRecording(
            token: create.account, presenter: create.presenter, perValue.flatMap { $0 }, limit: valuesPerHour, now: now,
            memoryBudget: create.memoryBudget)
        if let refusal {
            create.refused(refusal, true)
            return .refused(
                CreateAdmission.guessRefusal(
                    refusal,
                    valuesPastLimit:
                        "this token looked up \(valuesPerHour) distinct values of one bucket (a card's first six, last four "
                        + "and length) that the vault does not hold within an hour (limits.bucket_values_per_hour)"))
        }
        // Only what this request recorded is its own to give back.
        let mine = Set(recorded.map { [$0.bucket, $0.value] })
        return .named(perValue.map { $0.filter { mine.contains([$0.bucket, $0.value]) } })
    }

    /// Counts the values not found (`found[i]` false) as guesses in their buckets: on the
    /// unnamed path their buckets are worked out now (misses only), on the named one the hits'
    /// reservations are given back.
    func settle(_ pass: Pass, values: [String], found: [Bool], vault: Vault) {
        switch pass {
        case .refused:
            return
        case .unnamed:
            let misses = zip(values, found).filter { !$0.1 }.map(\.0)
            if !misses.isEmpty {
                let buckets = misses.flatMap {
                    vault.guessBuckets([AliasRequest(value: $0, format: .UUID, storage: .persistent)])
                }
                // Within the limit by the reservation: recorded, never refused.
                _ = create.limiter.admitRecording(
                    token: create.account, presenter: create.presenter, buckets, limit: valuesPerHour,
                    now: LoopClock.now(), mode: .reserved, memoryBudget: create.memoryBudget)
            }
            create.limiter.endUnnamed(token: create.account, count: values.count)
        case let .named(reservation):
            let hits = zip(reservation, found).filter { $0.1 }.flatMap { $0.0 }
            create.limiter.release(token: create.account, hits)
        }
    }
}

/// The monotonic clock in nanoseconds.
enum LoopClock {
    static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }
}
