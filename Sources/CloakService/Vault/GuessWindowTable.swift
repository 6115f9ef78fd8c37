/// Each open window of a guess account, found by its bucket: the number of the window's oldest
/// value in the account's ``GuessRecordQueue`` (``GuessWindows``).
///
/// Open addressing with linear probing, a power of two slots at most three quarters full. A slot
/// holds only the record's number (4 bytes): the bucket is read from the record, which the queue
/// keeps as long as the window holds it. Removal shifts the cluster back (no tombstones), so a
/// table that has seen a million windows come and go probes as one that holds what it holds now.
struct GuessWindowTable {
    private var slots: [UInt32] = []
    /// A bit a slot: taken or free.
    private var taken: [UInt64] = []
    private var shift = 64
    private(set) var count = 0

    var capacity: Int { slots.count }

    private func home(_ bucket: UInt64) -> Int {
        // Fibonacci hashing: the tags are an HMAC's, but tests and the hash need not rely on it.
        Int(truncatingIfNeeded: (bucket &* 0x9E37_79B9_7F4A_7C15) >> UInt64(shift))
    }

    private func isTaken(_ i: Int) -> Bool { taken[i >> 6] & (1 << UInt64(i & 63)) != 0 }

    private mutating func setTaken(_ i: Int, _ on: Bool) {
        if on { taken[i >> 6] |= 1 << UInt64(i & 63) } else { taken[i >> 6] &= ~(1 << UInt64(i & 63)) }
    }

    /// The slot of `bucket`'s window (nil: none open).
    func slot(of bucket: UInt64, in queue: GuessRecordQueue) -> Int? {
        guard count > 0 else { return nil }
        let mask = slots.count - 1
        var i = home(bucket)
        while isTaken(i) {
            if queue[slots[i]].bucket == bucket { return i }
            i = (i + 1) & mask
        }
        return nil
    }

    /// The number of the oldest value of the window in `slot`.
    subscript(slot: Int) -> UInt32 {
        get { slots[slot] }
        set { slots[slot] = newValue }
    }

    /// Opens `bucket`'s window (none is open) on record `number`.
    mutating func insert(_ bucket: UInt64, number: UInt32, in queue: GuessRecordQueue) {
        if (count + 1) * 4 > slots.count * 3 { resize(to: max(64, slots.count * 2), in: queue) }
        place(bucket, number)
        count += 1
    }

    private mutating func place(_ bucket: UInt64, _ number: UInt32) {
        let mask = slots.count - 1
        var i = home(bucket)
        while isTaken(i) { i = (i + 1) & mask }
        slots[i] = number
        setTaken(i, true)
    }

    /// Closes the window in `slot`: the later slots of its cluster that may move back do.
    mutating func remove(at slot: Int, in queue: GuessRecordQueue) {
        let mask = slots.count - 1
        var hole = slot, i = slot
        while true {
            i = (i + 1) & mask
            guard isTaken(i) else { break }
            let wanted = home(queue[slots[i]].bucket)
            // Moves back unless its home lies cyclically after the hole, up to it.
            let stays = hole <= i ? (hole < wanted && wanted <= i) : (hole < wanted || wanted <= i)
            if !stays {
                slots[hole] = slots[i]
                hole = i
            }
        }
        setTaken(hole, false)
        count -= 1
        if slots.count > 4_096, count * 8 < slots.count { resize(to: slots.count / 4, in: queue) }
    }

    private mutating func resize(to size: Int, in queue: GuessRecordQueue) {
        let old = slots, oldTaken = taken
        slots = [UInt32](repeating: 0, count: size)
        taken = [UInt64](repeating: 0, count: (size + 63) / 64)
        shift = 64 - size.trailingZeroBitCount
        for (i, number) in old.enumerated() where oldTaken[i >> 6] & (1 << UInt64(i & 63)) != 0 {
            place(queue[number].bucket, number)
        }
    }

    /// Bytes held.
    var footprint: Int { slots.count * MemoryLayout<UInt32>.stride + taken.count * 8 + 64 }
}
