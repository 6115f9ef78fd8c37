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

    /// The last count and when it was made (monotonic seconds), shared by a service's requests.
    final class Counts: Sendable {
        private let last = Mutex<(at: Double, counts: [String: Int])?>(nil)
        static let maxAge = 60.0

        func fresh(now: Double) -> [String: Int]? {
            last.withLock { last in last.flatMap { now - $0.at < Self.maxAge ? $0.counts : nil } }
        }

        func keep(_ counts: [String: Int], now: Double) { last.withLock { $0 = (now, counts) } }
    }

    /// 200 `{"current", "versions": [{"id", "records", "current"}], "orphans": [{"id", "records"}]}`:
    /// `orphans` are versions records name that the ring no longer holds (they cannot be opened).
    func status() -> Reply {
        let ring = vault.keyVersions
        let cache = self.counts
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
            if let counts = cache.fresh(now: now) { return answer(.success(counts)) }
            vault.withReader({ store in try store.recordCounts() }) { result in
                if case let .success(counts) = result { cache.keep(counts, now: now) }
                answer(result)
            }
        }
    }
}
