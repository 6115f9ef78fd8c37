import DequeModule

/// Every value a guess account recorded in the last hour, oldest first (``GuessWindows``).
///
/// Each record is numbered (a `UInt32` that wraps: a number is only compared as an offset from
/// the oldest, and fewer than 2^32 records are ever held). A record keeps its bucket and value
/// tags, 16 bytes, and a link to the next record of its window, 4; its second and its presenter
/// are kept as runs, since records come in order of their second (at most 3,601 runs an hour)
/// and mostly a presenter at a time.
///
/// Records sit in blocks of ``blockSize``: the queue never copies itself to grow (no moment
/// holding the old ring and the new), and a block is freed once its last record leaves.
struct GuessRecordQueue {
    struct Record {
        var bucket: UInt64
        var value: UInt64
    }

    /// A value shared by consecutive records from `start` on.
    struct Run {
        var start: UInt32
        var value: UInt32
    }

    static let blockShift = 12
    static let blockSize = 1 << blockShift

    /// Records, and the number of the next record of the same window (set once one follows).
    private struct Block {
        var records = ContiguousArray<Record>()
        var links = ContiguousArray<UInt32>()
    }

    private var blocks: Deque<Block> = []
    /// The oldest record's place in the first block.
    private var offset = 0
    private var seconds = RunColumn()
    private var payers = RunColumn()

    /// The oldest record's number (the next record's, when empty).
    private(set) var oldest: UInt32 = 0
    private(set) var count = 0

    init(firstNumber: UInt32 = 0) { oldest = firstNumber }

    var isEmpty: Bool { count == 0 }
    /// The next record's number.
    var next: UInt32 { oldest &+ UInt32(truncatingIfNeeded: count) }

    /// Records the value and returns its number.
    @discardableResult
    mutating func append(bucket: UInt64, value: UInt64, second: UInt32, payer: UInt32) -> UInt32 {
        let number = next
        if blocks.isEmpty || blocks[blocks.count - 1].records.count == Self.blockSize {
            // A queue's first block starts small and doubles (an account of a few values holds
            // a few hundred bytes); later ones are made whole.
            var block = Block()
            block.records.reserveCapacity(count < Self.blockSize ? 16 : Self.blockSize)
            block.links.reserveCapacity(count < Self.blockSize ? 16 : Self.blockSize)
            blocks.append(block)
        }
        blocks[blocks.count - 1].records.append(Record(bucket: bucket, value: value))
        blocks[blocks.count - 1].links.append(number)
        seconds.append(second, at: number)
        payers.append(payer, at: number)
        count += 1
        return number
    }

    /// Record `number` (one held: `oldest` up to `next`).
    subscript(number: UInt32) -> Record {
        let at = offset + Int(number &- oldest)
        return blocks[at >> Self.blockShift].records[at & (Self.blockSize - 1)]
    }

    /// The record of the same window that followed record `number` (`number` itself: none yet).
    func link(of number: UInt32) -> UInt32 {
        let at = offset + Int(number &- oldest)
        return blocks[at >> Self.blockShift].links[at & (Self.blockSize - 1)]
    }

    mutating func setLink(of number: UInt32, to next: UInt32) {
        let at = offset + Int(number &- oldest)
        blocks[at >> Self.blockShift].links[at & (Self.blockSize - 1)] = next
    }

    /// The oldest record, its second and its presenter (nil: none).
    var first: (record: Record, second: UInt32, payer: UInt32)? {
        guard count > 0 else { return nil }
        return (blocks[0].records[offset], seconds.first, payers.first)
    }

    /// The second record `number` was made at.
    func second(of number: UInt32) -> UInt32 { seconds.value(at: number &- oldest, oldest: oldest) }

    /// The presenter (its index) record `number` is charged to.
    func payer(of number: UInt32) -> UInt32 { payers.value(at: number &- oldest, oldest: oldest) }

    mutating func removeFirst() {
        precondition(count > 0)
        count -= 1
        oldest &+= 1
        offset += 1
        if offset == Self.blockSize || count == 0 {
            blocks.removeFirst()
            offset = 0
        }
        seconds.dropBefore(oldest, count: count)
        payers.dropBefore(oldest, count: count)
    }

    /// Bytes held: the blocks as allocated, the runs' rings at their peak (a ring grows by half
    /// again when full and is made anew once it holds under a quarter of its peak).
    var footprint: Int {
        blocks.reduce(0) { $0 + $1.records.capacity * MemoryLayout<Record>.stride + $1.links.capacity * 4 + 64 }
            + (blocks.count * 3 / 2 + 1) * MemoryLayout<Block>.stride
            + seconds.footprint + payers.footprint
    }
}

/// A column of ``GuessRecordQueue`` stored as runs: the value of the records from each run's
/// start to the next run's.
struct RunColumn {
    private var runs = Deque<GuessRecordQueue.Run>()
    private var peak = 0

    /// The oldest record's value.
    var first: UInt32 { runs[0].value }

    mutating func append(_ value: UInt32, at number: UInt32) {
        if let last = runs.last, last.value == value { return }
        runs.append(GuessRecordQueue.Run(start: number, value: value))
        peak = max(peak, runs.count)
    }

    /// The value of the record `offset` places after the oldest (`oldest`): the last run that
    /// starts at or before it (the first run may start before the oldest record).
    func value(at offset: UInt32, oldest: UInt32) -> UInt32 {
        var low = 0, high = runs.count - 1
        while low < high {
            let middle = (low + high + 1) / 2
            if runs[middle].start &- oldest <= offset { low = middle } else { high = middle - 1 }
        }
        return runs[low].value
    }

    /// Drops the runs that end before record `oldest` (all of them when `count`, the records
    /// left, is 0).
    mutating func dropBefore(_ oldest: UInt32, count: Int) {
        if count == 0 {
            runs.removeAll()
        } else {
            while runs.count > 1, runs[1].start == oldest { runs.removeFirst() }
        }
        if peak > 1_024, runs.count * 4 < peak {
            runs = Deque(runs)
            peak = runs.count
        }
    }

    var footprint: Int { (peak * 3 / 2 + 1) * MemoryLayout<GuessRecordQueue.Run>.stride }
}
