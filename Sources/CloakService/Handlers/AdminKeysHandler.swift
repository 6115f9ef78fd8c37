import CloakCore
import CloakHTTP
import CloakVault
import Synchronization

/// `GET /admin/keys` (scope `keys:read`): the key ring's versions and how many records each
/// still seals, read-only. Ids and counts only: never a key, a wrapping key's location or a
/// PKCS#11 PIN. Rotating, rewrapping and retiring stay `cloak keys` commands (each audited).
///
/// Counting reads every record, so it runs on the vault's reader connection and its answer is
/// kept for a minute (``Counts``): a page reloaded in a loop costs one scan a minute.
struct AdminKeysHandler: Sendable {
    let vault: Vault
    let counts: Counts

    /// The last count and when it was made (monotonic seconds), shared by a service's requests:
    /// one count runs at a time; while it runs, callers get the last one (or, before the first,
    /// wait for it).
    final class Counts: Sendable {
        private struct State {
            var last: (at: Double, counts: [String: Int])?
            var running = false
            var waiting: [@Sendable (Result<[String: Int], any Error>) -> Void] = []
        }
        private let state = Mutex(State())
        static let maxAge = 60.0

        /// Answers with a count at most ``maxAge`` old, or the last one while a new one runs.
        func read(
            now: Double, count: (@escaping @Sendable (Result<[String: Int], any Error>) -> Void) -> Void,
            clock: @escaping @Sendable () -> Double = ConsoleSessions.monotonicSeconds,
            _ answer: @escaping @Sendable (Result<[String: Int], any Error>) -> Void
        ) {
            let (immediate, start) = state.withLock { s -> ([String: Int]?, Bool) in
                if let last = s.last {
                    // Fresh, or stale while a count runs or starts now: the last one answers.
                    guard now - last.at >= Self.maxAge, !s.running else { return (last.counts, false) }
                    s.running = true
                    return (last.counts, true)
                }
                // None yet: wait for the first, started by the first caller.
                s.waiting.append(answer)
                guard !s.running else { return (nil, false) }
                s.running = true
                return (nil, true)
            }
            if let immediate { answer(.success(immediate)) }
            if start { refresh(count, clock) }
        }

        private func refresh(
            _ count: (@escaping @Sendable (Result<[String: Int], any Error>) -> Void) -> Void,
            _ clock: @escaping @Sendable () -> Double
        ) {
            count { [self] result in
                let waiting = state.withLock { s in
                    s.running = false
                    if case let .success(counts) = result { s.last = (clock(), counts) }
                    defer { s.waiting = [] }
                    return s.waiting
                }
                for answer in waiting { answer(result) }
            }
        }
    }

    /// 200 `{"current", "versions": [{"id", "records", "current"}], "orphans": [{"id", "records"}]}`:
    /// `orphans` are versions records name that the ring no longer holds (they cannot be opened).
    func status() -> Reply {
        let ring = vault.keyVersions
        let cache = self.counts
        let vault = self.vault
        let now = ConsoleSessions.monotonicSeconds()
        return .later { finish in
            let answer: @Sendable (Result<[String: Int], any Error>) -> Void = { result in
                guard case let .success(counts) = result else {
                    return finish(.error(.storeUnavailable("the store could not be read")))
                }
                let known = Set(ring.ids)
                let versions = ring.ids.map { id in
                    JSONValue.object([
                        ("id", .string(id)), ("records", .int(counts[id] ?? 0)), ("current", .bool(id == ring.current)),
                    ])
                }
                let orphans = counts.keys.filter { !known.contains($0) }.sorted().map { id in
                    JSONValue.object([("id", .string(id)), ("records", .int(counts[id] ?? 0))])
                }
                finish(
                    .json(
                        200,
                        .object([
                            ("current", .string(ring.current)), ("versions", .array(versions)),
                            ("orphans", .array(orphans)),
                        ]), headers: HTTPResponse.noStoreHeaders))
            }
            cache.read(
                now: now, count: { done in vault.withReader({ store in try store.recordCounts() }, completion: done) },
                answer)
        }
    }
}
