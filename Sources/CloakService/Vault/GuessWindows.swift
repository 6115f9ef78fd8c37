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
/// A window is a slot of ``windows`` naming its oldest value's record. Its later values are
/// linked from it, record to record, and found by ``values`` (bucket and value); its count is a
/// ``Chain``. A value costs its 20-byte record and a 4-byte slot of a table at least 37.5 % full:
/// about 28 bytes, however the values fall into buckets (issue 60: a migration's million cards,
/// a hundred a bucket, took 77 bytes a value in dictionaries, sets and rings, over 100 MiB at
/// the peak). Tags are the first 64 bits of the vault's HMACs. Nothing is evicted, shrunk or
/// merged before its hour ends.
final class GuessWindows {
    /// A window's values after its oldest: how many it holds, and its last record (the next
    /// value is linked from it). Records linked between may have been given back: they are no
    /// longer in ``values``.
    struct Chain {
        var count: Int
        var last: UInt32
    }

    /// An hour, in seconds.
    static let hour: UInt32 = 3_600

    /// Every value recorded in the last hour, in the order recorded (so by second).
    private var queue: GuessRecordQueue
    /// Each open window's oldest value.
    private var windows = GuessRecordTable<GuessBucketKey>()
    /// Each open window's later values.
    private var values = GuessRecordTable<GuessValueKey>()
    /// The windows holding more than one value.
    private var chains: [UInt64: Chain] = [:]
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
        var slots = 1
        while slots * 3 / 4 < chains.capacity { slots <<= 1 }
        let chainSlot = MemoryLayout<UInt64>.stride + MemoryLayout<Chain>.stride
        return queue.footprint + windows.footprint + values.footprint + slots * chainSlot + slots / 8
    }

    /// The second the oldest record was made (nil: none).
    var oldestSecond: UInt32? { queue.first?.second }

    /// Drops every value seen at least an hour before `now` (a whole second), at most `limit`
    /// records (the rest stay for a later call): how many it popped.
    @discardableResult
    func expire(now: UInt32, limit: Int = .max) -> Int {
        var popped = 0
        while popped < limit, let (record, second, payer) = queue.first, now >= second &+ Self.hour {
            // Held, the oldest record is its window's oldest value; given back, it is not. (Its
            // window moves on while the record is still there: the tables read keys from it.)
            let number = queue.oldest
            if let slot = windows.slot(of: record, in: queue), windows[slot] == number {
                promoteOrClose(record.bucket, slot: slot)
            }
            queue.removeFirst()
            popped += 1
            paid(payer)
        }
        if chains.capacity > 1_024, chains.count * 4 < chains.capacity {
            chains = Dictionary(uniqueKeysWithValues: chains.lazy.map { ($0.key, $0.value) })
        }
        return popped
    }

    func count(in bucket: UInt64) -> Int {
        guard windows.slot(of: Self.key(bucket), in: queue) != nil else { return 0 }
        return 1 + (chains[bucket]?.count ?? 0)
    }

    func contains(_ value: UInt64, in bucket: UInt64) -> Bool {
        guard let slot = windows.slot(of: Self.key(bucket), in: queue) else { return false }
        if queue[windows[slot]].value == value { return true }
        return chains[bucket] != nil && values.slot(of: Self.key(bucket, value), in: queue) != nil
    }

    /// When the oldest value of `bucket` was seen.
    func oldestSecond(in bucket: UInt64) -> UInt32? {
        windows.slot(of: Self.key(bucket), in: queue).map { queue.second(of: windows[$0]) }
    }

    private static func key(_ bucket: UInt64, _ value: UInt64 = 0) -> GuessRecordQueue.Record {
        GuessRecordQueue.Record(bucket: bucket, value: value)
    }

    /// How many records of the queue `presenter` made.
    func entries(by presenter: String) -> Int {
        presenterIndex[presenter].map { presenters[Int($0)].entries } ?? 0
    }

    /// Records `value` (not held yet) in `bucket` at `second`, charged to `presenter`.
    func record(_ value: UInt64, in bucket: UInt64, at second: UInt32, by presenter: String) {
        latest = max(latest, second)
        let open = windows.slot(of: Self.key(bucket), in: queue)
        let number = queue.append(bucket: bucket, value: value, second: latest, payer: index(of: presenter))
        if let open {
            var chain = chains[bucket] ?? Chain(count: 0, last: windows[open])
            queue.setLink(of: chain.last, to: number)
            chain.last = number
            chain.count += 1
            chains[bucket] = chain
            values.insert(number, in: queue)
        } else {
            windows.insert(number, in: queue)
        }
        held += 1
    }

    /// Gives back `value` of `bucket` (a lookup's hit): it no longer counts against the bucket.
    /// Its record stays, charged to its presenter, until its hour ends.
    func release(_ value: UInt64, in bucket: UInt64) {
        guard let slot = windows.slot(of: Self.key(bucket), in: queue) else { return }
        if queue[windows[slot]].value == value {
            promoteOrClose(bucket, slot: slot)
        } else if chains[bucket] != nil, let at = values.slot(of: Self.key(bucket, value), in: queue) {
            values.remove(at: at, in: queue)
            held -= 1
            chains[bucket]!.count -= 1
            if chains[bucket]!.count == 0 { chains[bucket] = nil }
        }
    }

    /// Removes a window's oldest value: its next held value takes its place (following the
    /// links past values given back, each passed once), or the window closes.
    private func promoteOrClose(_ bucket: UInt64, slot: Int) {
        held -= 1
        guard var chain = chains[bucket] else {
            windows.remove(at: slot, in: queue)
            return
        }
        var next = queue.link(of: windows[slot])
        while true {
            if let at = values.slot(of: queue[next], in: queue), values[at] == next {
                values.remove(at: at, in: queue)
                break
            }
            next = queue.link(of: next)
        }
        windows[slot] = next
        chain.count -= 1
        chains[bucket] = chain.count == 0 ? nil : chain
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

    /// One record of the queue as a snapshot keeps it (``GuessWindowsSnapshot``).
    struct Kept: Equatable {
        var bucket: UInt64
        var value: UInt64
        var second: UInt32
        var presenter: String
        /// Still counted in its window (not given back).
        var held: Bool
    }

    /// Every record of the queue, oldest first: replayed in order by ``record(_:in:at:by:)``
    /// (and ``release(_:in:)`` for one not held), they give back the same windows and counts.
    func kept() -> [Kept] {
        var out: [Kept] = []
        out.reserveCapacity(queue.count)
        for i in 0..<queue.count {
            let number = queue.oldest &+ UInt32(truncatingIfNeeded: i)
            let record = queue[number]
            var held = false
            if let slot = windows.slot(of: Self.key(record.bucket), in: queue), windows[slot] == number {
                held = true
            } else if chains[record.bucket] != nil, let at = values.slot(of: record, in: queue), values[at] == number {
                held = true
            }
            out.append(
                Kept(
                    bucket: record.bucket, value: record.value, second: queue.second(of: number),
                    presenter: presenters[Int(queue.payer(of: number))].name, held: held))
        }
        return out
    }
}
