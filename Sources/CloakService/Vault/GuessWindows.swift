import DequeModule

/// One guess account's windows (``BucketGuessLimiter``): for each bucket, the distinct values
/// counted in the last hour. No lock and no clock: its shard's lock guards it and the caller
/// passes the time, in seconds.
///
/// Every operation costs O(1) amortised, whatever the account has done before:
/// - every value recorded is an entry of a queue in the order recorded, popped once when its
///   hour ends (removing its value, unless it was given back), never by scanning the windows;
/// - the counts the limits read (values held, entries each presenter recorded) are kept as
///   entries come and go.
///
/// A window holds its oldest value inline: most hold one (a backend sees each card's bucket
/// once an hour), so one costs about 16 bytes in ``windows``, 16 in ``queue`` and the hash
/// table's free slots: at most 96 bytes (`GuessLimiterScaleTests`). Tags are the first 64 bits
/// of the vault's HMACs. Nothing is evicted, shrunk or merged before its hour ends.
final class GuessWindows {
    /// A value's tag and the second it was first seen, rounded up (it leaves the hour no sooner
    /// than an hour after it was seen).
    struct Seen {
        var value: UInt64
        var second: UInt32
    }

    /// A value recorded: its bucket, its second and the presenter it is charged to (an index
    /// into ``presenters``), until its hour ends, given back or not.
    struct Entry {
        var bucket: UInt64
        var second: UInt32
        var payer: UInt32
    }

    /// A window's values after its first, oldest first; hashed once there are many.
    struct Overflow {
        static let hashedFrom = 16
        var seen: Deque<Seen> = []
        var members: Set<UInt64>?

        func contains(_ value: UInt64) -> Bool {
            if let members { return members.contains(value) }
            return seen.contains { $0.value == value }
        }

        mutating func append(_ entry: Seen) {
            seen.append(entry)
            if members != nil {
                members!.insert(entry.value)
            } else if seen.count >= Self.hashedFrom {
                members = Set(seen.lazy.map(\.value))
            }
        }

        mutating func removeFirst() -> Seen {
            let entry = seen.removeFirst()
            members?.remove(entry.value)
            return entry
        }

        mutating func remove(_ value: UInt64) -> Bool {
            guard let i = seen.firstIndex(where: { $0.value == value }) else { return false }
            seen.remove(at: i)
            members?.remove(value)
            return true
        }
    }

    /// An hour, in seconds.
    static let hour: UInt32 = 3_600

    /// Each bucket's oldest value.
    private var windows: [UInt64: Seen] = [:]
    private var overflow: [UInt64: Overflow] = [:]
    /// Every value recorded in the last hour, in the order recorded (so by second).
    private var queue = Deque<Entry>()
    /// The latest second recorded: later records never take an earlier one, so the queue stays
    /// in order when requests' clocks were read out of order.
    private var latest: UInt32 = 0
    /// The most entries ``queue`` held since it was last made anew (its ring grows by half
    /// again when full and never shrinks by itself).
    private var queuePeak = 0

    /// Presenters (token ids) with entries in the queue, by index, and how many each has.
    private var presenterIndex: [String: UInt32] = [:]
    private var presenters: [(name: String, entries: Int)] = []
    private var freeIndexes: [UInt32] = []

    /// Values held in all windows (given-back ones are not).
    private(set) var held = 0
    /// Values of requests under way on the unnamed path (``BucketGuessLimiter/reserveUnnamed``).
    var inFlight = 0

    var isIdle: Bool { queue.isEmpty && inFlight == 0 }

    /// Entries in the queue: what the account is charged for (``BucketGuessLimiter/entryBytes``).
    var entries: Int { queue.count }

    /// What the tables hold, in bytes, worked out from their capacities (a hash table has a power
    /// of two slots, at most three quarters full, and a bit a slot): the charge must cover it.
    var footprint: Int {
        func table(_ capacity: Int, _ stride: Int) -> Int {
            guard capacity > 0 else { return 0 }
            var slots = 1
            while slots * 3 / 4 < capacity { slots <<= 1 }
            return slots * stride + slots / 8
        }
        let windowSlot = MemoryLayout<UInt64>.stride + MemoryLayout<Seen>.stride
        let overflowSlot = MemoryLayout<UInt64>.stride + MemoryLayout<Overflow>.stride
        var bytes = table(windows.capacity, windowSlot) + table(overflow.capacity, overflowSlot)
        bytes += (queuePeak * 3 / 2 + 1) * MemoryLayout<Entry>.stride
        for o in overflow.values {
            bytes += o.seen.count * 3 / 2 * MemoryLayout<Seen>.stride + 32
            if let members = o.members { bytes += table(members.capacity, MemoryLayout<UInt64>.stride) + 32 }
        }
        return bytes
    }

    /// The second the oldest entry was recorded (nil: none).
    var oldestSecond: UInt32? { queue.first?.second }

    /// Drops every value seen at least an hour before `now` (a whole second), at most `limit`
    /// entries (the rest stay for a later call): how many it popped.
    @discardableResult
    func expire(now: UInt32, limit: Int = .max) -> Int {
        var popped = 0
        while popped < limit, let entry = queue.first, now >= entry.second &+ Self.hour {
            queue.removeFirst()
            popped += 1
            dropOldest(of: entry.bucket, seenBy: entry.second)
            paid(entry.payer)
        }
        compactIfSparse()
        return popped
    }

    func count(in bucket: UInt64) -> Int {
        guard windows[bucket] != nil else { return 0 }
        return 1 + (overflow[bucket]?.seen.count ?? 0)
    }

    func contains(_ value: UInt64, in bucket: UInt64) -> Bool {
        guard let first = windows[bucket] else { return false }
        return first.value == value || overflow[bucket]?.contains(value) == true
    }

    /// When the oldest value of `bucket` was seen.
    func oldestSecond(in bucket: UInt64) -> UInt32? { windows[bucket]?.second }

    /// How many entries of the queue `presenter` recorded.
    func entries(by presenter: String) -> Int {
        presenterIndex[presenter].map { presenters[Int($0)].entries } ?? 0
    }

    /// Records `value` (not held yet) in `bucket` at `second`, charged to `presenter`.
    func record(_ value: UInt64, in bucket: UInt64, at second: UInt32, by presenter: String) {
        latest = max(latest, second)
        let seen = Seen(value: value, second: latest)
        if windows[bucket] != nil {
            overflow[bucket, default: Overflow()].append(seen)
        } else {
            windows[bucket] = seen
        }
        queue.append(Entry(bucket: bucket, second: latest, payer: index(of: presenter)))
        queuePeak = max(queuePeak, queue.count)
        held += 1
    }

    /// Gives back `value` of `bucket` (a lookup's hit): it no longer counts against the bucket.
    /// Its entry stays, charged to its presenter, until its hour ends.
    func release(_ value: UInt64, in bucket: UInt64) {
        guard let first = windows[bucket] else { return }
        if first.value == value {
            promoteOrClose(bucket)
        } else if overflow[bucket]?.remove(value) == true {
            held -= 1
            if overflow[bucket]?.seen.isEmpty == true { overflow[bucket] = nil }
        }
    }

    /// Removes the window's oldest value when it was seen no later than `second` (an entry
    /// whose own value was given back finds a later one, or none, and leaves it: values seen in
    /// the same second leave the hour together, so which of them goes first does not matter).
    private func dropOldest(of bucket: UInt64, seenBy second: UInt32) {
        guard let first = windows[bucket], first.second <= second else { return }
        promoteOrClose(bucket)
    }

    /// Removes a window's first value: its next takes its place, or the window closes.
    private func promoteOrClose(_ bucket: UInt64) {
        held -= 1
        if overflow[bucket] != nil {
            windows[bucket] = overflow[bucket]!.removeFirst()
            if overflow[bucket]!.seen.isEmpty { overflow[bucket] = nil }
        } else {
            windows[bucket] = nil
        }
    }

    /// Tables keep their size when entries leave: once one holds under an eighth of what it has
    /// room for, it is made anew at its size (paid for by the removals since it was full), so an
    /// account holds memory for what it counts now, not for the most it ever counted.
    private func compactIfSparse() {
        let floor = 4_096
        if windows.capacity > floor, windows.count * 8 < windows.capacity {
            windows = Dictionary(uniqueKeysWithValues: windows.lazy.map { ($0.key, $0.value) })
        }
        if overflow.capacity > floor, overflow.count * 8 < overflow.capacity {
            overflow = Dictionary(uniqueKeysWithValues: overflow.lazy.map { ($0.key, $0.value) })
        }
        if queuePeak > floor, queue.count * 8 < queuePeak {
            queue = Deque(queue)
            queuePeak = queue.count
        }
    }

    private func index(of presenter: String) -> UInt32 {
        if let i = presenterIndex[presenter] {
            presenters[Int(i)].entries += 1
            return i
        }
        let i: UInt32
        if let free = freeIndexes.popLast() {
            i = free
            presenters[Int(i)] = (presenter, 1)
        } else {
            i = UInt32(presenters.count)
            presenters.append((presenter, 1))
        }
        presenterIndex[presenter] = i
        return i
    }

    private func paid(_ i: UInt32) {
        presenters[Int(i)].entries -= 1
        guard presenters[Int(i)].entries == 0 else { return }
        presenterIndex[presenters[Int(i)].name] = nil
        presenters[Int(i)].name = ""
        freeIndexes.append(i)
    }
}
