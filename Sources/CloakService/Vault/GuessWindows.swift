import DequeModule

/// One guess account's windows (``BucketGuessLimiter``): for each bucket, the distinct values
/// counted in the last hour. No lock and no clock: its shard's lock guards it and the caller
/// passes the time, in seconds.
///
/// Every operation costs O(1) amortised, whatever the account has done before:
/// - every value recorded is a record of a queue in the order recorded (``GuessRecordQueue``),
///   popped once when its hour ends (closing its window's oldest value, unless it was given
///   back), never by scanning the windows;
/// - the counts the limits read (values held, records each presenter made) are kept as records
///   come and go.
///
/// A window is a slot of ``GuessWindowTable`` naming its oldest value's record; most hold one (a
/// backend sees each card's bucket once an hour), and one costs its 16-byte record and at most
/// 11 bytes of table: a million cards take about 25 MiB (issue 60: a migration's import ran at
/// 77 bytes a value, over 100 MiB at its peak). A window's later values are an ``Overflow``.
/// Tags are the first 64 bits of the vault's HMACs. Nothing is evicted, shrunk or merged before
/// its hour ends.
final class GuessWindows {
    /// A window's values after its first, oldest first (their records' numbers); hashed once
    /// there are many.
    struct Overflow {
        static let hashedFrom = 16
        var seen: Deque<UInt32> = []
        var members: Set<UInt64>?

        func contains(_ value: UInt64, in queue: GuessRecordQueue) -> Bool {
            if let members { return members.contains(value) }
            return seen.contains { queue[$0].value == value }
        }

        mutating func append(_ number: UInt32, in queue: GuessRecordQueue) {
            seen.append(number)
            if members != nil {
                members!.insert(queue[number].value)
            } else if seen.count >= Self.hashedFrom {
                members = Set(seen.lazy.map { queue[$0].value })
            }
        }

        mutating func removeFirst(in queue: GuessRecordQueue) -> UInt32 {
            let number = seen.removeFirst()
            members?.remove(queue[number].value)
            return number
        }

        mutating func remove(_ value: UInt64, in queue: GuessRecordQueue) -> Bool {
            guard let i = seen.firstIndex(where: { queue[$0].value == value }) else { return false }
            seen.remove(at: i)
            members?.remove(value)
            return true
        }
    }

    /// An hour, in seconds.
    static let hour: UInt32 = 3_600

    /// Every value recorded in the last hour, in the order recorded (so by second).
    private var queue: GuessRecordQueue
    /// Each open window's oldest value.
    private var windows = GuessWindowTable()
    private var overflow: [UInt64: Overflow] = [:]
    /// The latest second recorded: later records never take an earlier one, so the queue stays
    /// in order when requests' clocks were read out of order.
    private var latest: UInt32 = 0

    /// Presenters (token ids) with records in the queue, by index, and how many each has.
    private var presenterIndex: [String: UInt32] = [:]
    private var presenters: [(name: String, entries: Int)] = []
    private var freeIndexes: [UInt32] = []

    /// Values held in all windows (given-back ones are not).
    private(set) var held = 0
    /// Values of requests under way on the unnamed path (``BucketGuessLimiter/reserveUnnamed``).
    var inFlight = 0

    /// - Parameter firstNumber: the first record's number (tests start near the wrap).
    init(firstNumber: UInt32 = 0) {
        queue = GuessRecordQueue(firstNumber: firstNumber)
    }

    var isIdle: Bool { queue.isEmpty && inFlight == 0 }

    /// Records in the queue: what the account is charged for (``BucketGuessLimiter/entryBytes``).
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
        let overflowSlot = MemoryLayout<UInt64>.stride + MemoryLayout<Overflow>.stride
        var bytes = queue.footprint + windows.footprint + table(overflow.capacity, overflowSlot)
        for o in overflow.values {
            bytes += o.seen.count * 3 / 2 * MemoryLayout<UInt32>.stride + 32
            if let members = o.members { bytes += table(members.capacity, MemoryLayout<UInt64>.stride) + 32 }
        }
        return bytes
    }

    /// The second the oldest record was made (nil: none).
    var oldestSecond: UInt32? { queue.first?.second }

    /// Drops every value seen at least an hour before `now` (a whole second), at most `limit`
    /// records (the rest stay for a later call): how many it popped.
    @discardableResult
    func expire(now: UInt32, limit: Int = .max) -> Int {
        var popped = 0
        while popped < limit, let (record, second, payer) = queue.first, now >= second &+ Self.hour {
            // Held, the oldest record is its window's oldest value; given back, it is not. (The
            // window is found while the record is still there: the table reads buckets from it.)
            let number = queue.oldest
            let slot = windows.slot(of: record.bucket, in: queue).flatMap { windows[$0] == number ? $0 : nil }
            queue.removeFirst()
            popped += 1
            if let slot { promoteOrClose(record.bucket, slot: slot) }
            paid(payer)
        }
        if overflow.capacity > 4_096, overflow.count * 8 < overflow.capacity {
            overflow = Dictionary(uniqueKeysWithValues: overflow.lazy.map { ($0.key, $0.value) })
        }
        return popped
    }

    func count(in bucket: UInt64) -> Int {
        guard windows.slot(of: bucket, in: queue) != nil else { return 0 }
        return 1 + (overflow[bucket]?.seen.count ?? 0)
    }

    func contains(_ value: UInt64, in bucket: UInt64) -> Bool {
        guard let slot = windows.slot(of: bucket, in: queue) else { return false }
        return queue[windows[slot]].value == value || overflow[bucket]?.contains(value, in: queue) == true
    }

    /// When the oldest value of `bucket` was seen.
    func oldestSecond(in bucket: UInt64) -> UInt32? {
        windows.slot(of: bucket, in: queue).map { queue.second(of: windows[$0]) }
    }

    /// How many records of the queue `presenter` made.
    func entries(by presenter: String) -> Int {
        presenterIndex[presenter].map { presenters[Int($0)].entries } ?? 0
    }

    /// Records `value` (not held yet) in `bucket` at `second`, charged to `presenter`.
    func record(_ value: UInt64, in bucket: UInt64, at second: UInt32, by presenter: String) {
        latest = max(latest, second)
        let open = windows.slot(of: bucket, in: queue)
        let number = queue.append(bucket: bucket, value: value, second: latest, payer: index(of: presenter))
        if open != nil {
            overflow[bucket, default: Overflow()].append(number, in: queue)
        } else {
            windows.insert(bucket, number: number, in: queue)
        }
        held += 1
    }

    /// Gives back `value` of `bucket` (a lookup's hit): it no longer counts against the bucket.
    /// Its record stays, charged to its presenter, until its hour ends.
    func release(_ value: UInt64, in bucket: UInt64) {
        guard let slot = windows.slot(of: bucket, in: queue) else { return }
        if queue[windows[slot]].value == value {
            promoteOrClose(bucket, slot: slot)
        } else if overflow[bucket]?.remove(value, in: queue) == true {
            held -= 1
            if overflow[bucket]?.seen.isEmpty == true { overflow[bucket] = nil }
        }
    }

    /// Removes the window's first value: its next takes its place, or the window closes.
    private func promoteOrClose(_ bucket: UInt64, slot: Int) {
        held -= 1
        if overflow[bucket] != nil {
            windows[slot] = overflow[bucket]!.removeFirst(in: queue)
            if overflow[bucket]!.seen.isEmpty { overflow[bucket] = nil }
        } else {
            windows.remove(at: slot, in: queue)
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
