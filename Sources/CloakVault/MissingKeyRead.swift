import CloakCrypto
import Synchronization

/// What a vault thread does when a record names a key version this node does not hold yet:
/// `cloak keys rotate` on another machine, then `cloak keys rewrap`, reseals records under a
/// version that nodes pick up only at their next `vault.key_refresh_s`. Refusing those records
/// until then (503 for every rewrapped record) would make the vault refuse its own data after
/// its own key operation, so the thread reads the store's ring at once and retries.
///
/// One read at a time per node (the others wait for it, then find the key), and at most one
/// every ``minimumInterval`` for each missing version: a record under a version that is truly
/// gone (a retired key, a restored backup) costs one store read a quarter second, never one per
/// request, and does not hold up the read a newly rotated version needs.
final class MissingKeyRead: Sendable {
    /// Hands the store's wrapped ring to whoever can unwrap it (the service, which holds the
    /// wrapping key); it adopts the ring into the vault.
    typealias Adopt = @Sendable (_ wrappedRing: [UInt8]) -> Void

    static let minimumInterval: Duration = .milliseconds(250)

    private struct State {
        var adopt: Adopt?
        /// When each missing version was last read for: a record under a version that is truly
        /// gone (retired) does not take the read a newly rotated version needs.
        var last: [String: ContinuousClock.Instant] = [:]
        var reads = 0
    }

    private let state = Mutex(State())

    func setAdopt(_ adopt: @escaping Adopt) { state.withLock { $0.adopt = adopt } }

    /// Store reads made so far (tests).
    var reads: Int { state.withLock { $0.reads } }

    /// On a vault thread: the key `id`, after reading the store's ring when `lookup` does not
    /// find it. nil when the ring read is not allowed yet or the ring does not hold it either.
    func key(
        _ id: String, in store: any AliasStore, ringName: String, lookup: () -> KeyRing.DataKey?
    ) -> KeyRing.DataKey? {
        if let key = lookup() { return key }
        // Held across the read: a second thread that misses the same version waits here, then
        // finds the key the first one adopted.
        return state.withLock { state -> KeyRing.DataKey? in
            if let key = lookup() { return key }
            guard let adopt = state.adopt else { return nil }
            let now = ContinuousClock.now
            if let last = state.last[id], now - last < Self.minimumInterval { return nil }
            if state.last.count > 64 { state.last = state.last.filter { now - $0.value < Self.minimumInterval } }
            state.last[id] = now
            state.reads += 1
            guard let wrapped = try? store.metadata(ringName) else { return nil }
            adopt(wrapped)
            return lookup()
        }
    }
}
