/// Records of a guess account's ``GuessRecordQueue``, found by their key (``GuessWindows``):
/// by bucket, each open window's oldest value; by bucket and value, the window's later values.
///
/// Open addressing with linear probing, a power of two slots at most three quarters full, halved
/// once under a quarter full (past 1,024 slots). A slot
/// holds only the record's number (4 bytes): the key is read from the record, which the queue
/// keeps as long as the table names it. Removal shifts the cluster back (no tombstones), so a
/// table that has seen a million records come and go probes as one that holds what it holds now.
struct GuessRecordTable<Key: GuessRecordKey> {
    private var slots: [UInt32] = []
    /// A bit a slot: taken or free.
    private var taken: [UInt64] = []
    private var shift = 64
    private(set) var count = 0

    private func home(_ hash: UInt64) -> Int {
        // Fibonacci hashing: the tags are an HMAC's, but tests and the hash need not rely on it.
        Int(truncatingIfNeeded: (hash &* 0x9E37_79B9_7F4A_7C15) >> UInt64(shift))
    }

    private func isTaken(_ i: Int) -> Bool { taken[i >> 6] & (1 << UInt64(i & 63)) != 0 }

    private mutating func setTaken(_ i: Int, _ on: Bool) {
        if on { taken[i >> 6] |= 1 << UInt64(i & 63) } else { taken[i >> 6] &= ~(1 << UInt64(i & 63)) }
    }

    /// The slot of the record whose key is `record`'s (nil: none).
    func slot(of record: GuessRecordQueue.Record, in queue: GuessRecordQueue) -> Int? {
        guard count > 0 else { return nil }
        let mask = slots.count - 1
        var i = home(Key.hash(record))
        while isTaken(i) {
            if Key.same(queue[slots[i]], record) { return i }
            i = (i + 1) & mask
        }
        return nil
    }

    /// The record number in `slot`.
    subscript(slot: Int) -> UInt32 {
        get { slots[slot] }
        set { slots[slot] = newValue }
    }

    /// Adds record `number` (no record of its key is in the table).
    mutating func insert(_ number: UInt32, in queue: GuessRecordQueue) {
        if (count + 1) * 4 > slots.count * 3 { resize(to: max(64, slots.count * 2), in: queue) }
        place(number, home(Key.hash(queue[number])))
        count += 1
    }

    private mutating func place(_ number: UInt32, _ start: Int) {
        let mask = slots.count - 1
        var i = start
        while isTaken(i) { i = (i + 1) & mask }
        slots[i] = number
        setTaken(i, true)
    }

    /// Removes the record in `slot`: the later slots of its cluster that may move back do.
    mutating func remove(at slot: Int, in queue: GuessRecordQueue) {
        let mask = slots.count - 1
        var hole = slot, i = slot
        while true {
            i = (i + 1) & mask
            guard isTaken(i) else { break }
            let wanted = home(Key.hash(queue[slots[i]]))
            // Moves back unless its home lies cyclically after the hole, up to it.
            let stays = hole <= i ? (hole < wanted && wanted <= i) : (hole < wanted || wanted <= i)
            if !stays {
                slots[hole] = slots[i]
                hole = i
            }
        }
        setTaken(hole, false)
        count -= 1
        if slots.count > 1_024, count * 4 < slots.count { resize(to: slots.count / 2, in: queue) }
    }

    private mutating func resize(to size: Int, in queue: GuessRecordQueue) {
        let old = slots, oldTaken = taken
        slots = [UInt32](repeating: 0, count: size)
        taken = [UInt64](repeating: 0, count: (size + 63) / 64)
        shift = 64 - size.trailingZeroBitCount
        for (i, number) in old.enumerated() where oldTaken[i >> 6] & (1 << UInt64(i & 63)) != 0 {
            place(number, home(Key.hash(queue[number])))
        }
    }

    /// Bytes held.
    var footprint: Int { slots.count * MemoryLayout<UInt32>.stride + taken.count * 8 + 64 }
}

/// What a ``GuessRecordTable`` finds its records by.
protocol GuessRecordKey {
    static func hash(_ record: GuessRecordQueue.Record) -> UInt64
    static func same(_ a: GuessRecordQueue.Record, _ b: GuessRecordQueue.Record) -> Bool
}

/// A window: records of one bucket.
enum GuessBucketKey: GuessRecordKey {
    static func hash(_ record: GuessRecordQueue.Record) -> UInt64 { record.bucket }
    static func same(_ a: GuessRecordQueue.Record, _ b: GuessRecordQueue.Record) -> Bool { a.bucket == b.bucket }
}

/// A value of a window.
enum GuessValueKey: GuessRecordKey {
    static func hash(_ record: GuessRecordQueue.Record) -> UInt64 {
        record.bucket ^ (record.value << 29 | record.value >> 35)
    }
    static func same(_ a: GuessRecordQueue.Record, _ b: GuessRecordQueue.Record) -> Bool {
        a.bucket == b.bucket && a.value == b.value
    }
}
