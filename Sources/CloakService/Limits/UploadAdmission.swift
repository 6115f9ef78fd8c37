import CloakCore
import CloakHTTP
import Dispatch
import Synchronization

/// What an upload (a form with files, issue 55, items 2 and 5) takes before its body is read:
/// a share of the node's upload memory (`limits.upload_memory_mib`), and its size from the
/// client address's and the token's upload buckets (`limits.upload_mib_per_minute`).
///
/// Charged when the upload begins, by the size it declares (`Content-Length`), a MiB at least; a
/// body without a length pays each further MiB as it arrives (``UploadTicket/received(_:)``). A
/// refused submission has paid for what it sent, so refusals cannot fill a disk for free.
/// Shared by every generation of the configuration (``ServiceState``).
final class UploadAdmission: Sendable {
    /// What one streamed upload holds at most: sealed chunks waiting for the store
    /// (``FormUpload/queueLimit``), a chunk of plaintext being sealed, the inspection's tail (up
    /// to twice ``FileSniffer/tailLength``) and the reader's buffers.
    static let bytesPerUpload = 3 << 19  // 1.5 MiB

    private let limiter = RateLimiter()
    private let reserved = Atomic<Int>(0)
    /// Uploads in flight per anonymous client address (its /64 for IPv6): one address may hold
    /// at most an eighth of the memory budget, so it cannot take every slot with bodies it
    /// never sends (each would cost it only a MiB of its bucket).
    private let inFlight = Mutex<[RateLimiter.Key: Int]>([:])

    /// Admits an upload, or refuses it: 503 with `Retry-After` past the node's upload memory,
    /// 429 with `Retry-After` past the address's or the token's MiB a minute.
    /// - Parameter refused: told each time the MiB buckets refuse (the rate-limit metric).
    func admit(
        client: String, token: String?, declaredBytes: Int?, limits: ServiceConfiguration.RateLimits,
        refused: @escaping @Sendable () -> Void = {}
    ) throws(CloakError) -> UploadTicket {
        let budget = limits.uploadMemoryMiB << 20
        let busy = CloakError(
            .tooManyConnections, "too many uploads in progress (limits.upload_memory_mib); retry after 1 s",
            extraInfo: [("retryAfterSeconds", .int(1))])
        var address: RateLimiter.Key?
        if token == nil {
            let key = RateLimiter.Key.client(client)
            let share = max(2, budget / Self.bytesPerUpload / 8)
            let admitted = inFlight.withLock { counts in
                guard counts[key, default: 0] < share else { return false }
                counts[key, default: 0] += 1
                return true
            }
            guard admitted else { throw busy }
            address = key
        }
        let taken = reserved.wrappingAdd(Self.bytesPerUpload, ordering: .relaxed).newValue
        if taken > budget {
            reserved.wrappingSubtract(Self.bytesPerUpload, ordering: .relaxed)
            if let address { leave(address) }
            throw busy
        }
        let ticket = UploadTicket(
            admission: self, client: client, address: address, token: token, limits: limits, refused: refused)
        let mib = max(1, ((declaredBytes ?? 0) + (1 << 20) - 1) >> 20)
        if let wait = ticket.charge(mib: mib) {
            ticket.release()
            throw UploadTicket.tooMuch(wait)
        }
        return ticket
    }

    /// Uploads admitted and not yet finished or dropped on this node.
    var inProgress: Int { reserved.load(ordering: .relaxed) / Self.bytesPerUpload }

    fileprivate func take(_ key: RateLimiter.Key, mib: Int, limit: RateLimit) -> Int? {
        limiter.take(key, limit: limit, now: DispatchTime.now().uptimeNanoseconds, cost: mib)
    }

    fileprivate func release(_ address: RateLimiter.Key?) {
        reserved.wrappingSubtract(Self.bytesPerUpload, ordering: .relaxed)
        if let address { leave(address) }
    }

    private func leave(_ address: RateLimiter.Key) {
        inFlight.withLock { counts in
            let left = counts[address, default: 1] - 1
            counts[address] = left > 0 ? left : nil
        }
    }
}

/// One admitted upload: what it has paid for, and its share of the upload memory until
/// ``release()`` (once, whatever calls it again). Touched on the request's loop only.
final class UploadTicket: @unchecked Sendable {
    private let admission: UploadAdmission
    private let client: String
    /// The anonymous address's in-flight slot (nil for a token's upload).
    private let address: RateLimiter.Key?
    private let token: String?
    private let limit: RateLimit
    private let refused: @Sendable () -> Void
    /// MiB paid for so far.
    private var paid = 0
    private var released = false

    fileprivate init(
        admission: UploadAdmission, client: String, address: RateLimiter.Key?, token: String?,
        limits: ServiceConfiguration.RateLimits, refused: @escaping @Sendable () -> Void
    ) {
        self.admission = admission
        self.client = client
        self.address = address
        self.token = token
        let perMinute = limits.uploadMiBPerMinute
        self.limit = RateLimit(requestsPerMinute: perMinute, burst: perMinute)
        self.refused = refused
    }

    /// `mib` more from both buckets; nil when paid, else the seconds to wait.
    fileprivate func charge(mib: Int) -> Int? {
        paid += mib
        var wait = admission.take(.client(client), mib: mib, limit: limit)
        if let token, let tokenWait = admission.take(.token(token), mib: mib, limit: limit) {
            wait = max(wait ?? 0, tokenWait)
        }
        if wait != nil { refused() }
        return wait
    }

    /// The body has brought `total` bytes so far: each MiB past what was paid is paid now; a
    /// 429 when the buckets refuse.
    func received(_ total: Int) throws(CloakError) {
        let needed = (total + (1 << 20) - 1) >> 20
        guard needed > paid else { return }
        if let wait = charge(mib: needed - paid) { throw Self.tooMuch(wait) }
    }

    func release() {
        guard !released else { return }
        released = true
        admission.release(address)
    }

    deinit { release() }

    fileprivate static func tooMuch(_ wait: Int) -> CloakError {
        CloakError(
            .tooManyRequests, "too many uploaded bytes (limits.upload_mib_per_minute); retry after \(wait) s",
            extraInfo: [("retryAfterSeconds", .int(wait))])
    }
}
