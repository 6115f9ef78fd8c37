/// A BIN table (issue 48): account ranges of 6 to 19 digits, as card networks publish them,
/// each with its ``CardAttributes``. A query of N digits answers the most specific range that
/// holds it: the longest range of at most N digits whose `low...high` holds the query's first
/// digits of that length. Ranges of one length never overlap (``BinTableReader`` refuses it).
///
/// Built for a few hundred thousand ranges: per length, the ranges' bounds as sorted integers
/// and an index into the distinct attributes (20 bytes a range); a lookup is one binary search
/// per length, longest first.
public struct BinTable: Sendable {
    public static let shortestRange = 6
    public static let longestRange = 19

    /// One length's ranges, sorted by `low`.
    struct Ranges: Sendable {
        var lows: [UInt64] = []
        var highs: [UInt64] = []
        var attributes: [UInt32] = []
    }

    /// By range length - 6 (index 0: six digits).
    let byLength: [Ranges]
    /// The distinct attributes every range points into.
    public let attributes: [CardAttributes]

    /// The number of ranges.
    public var count: Int { byLength.reduce(0) { $0 + $1.lows.count } }

    /// The table of what ``BinTableReader`` read (it checked every range: digits of one length,
    /// 6 to 19, none of one length overlapping).
    public init(_ table: BinTableReader.Table) {
        var byLength = [Ranges](repeating: Ranges(), count: Self.longestRange - Self.shortestRange + 1)
        for row in table.rows.sorted(by: { $0.low < $1.low }) {
            let i = Int(row.length) - Self.shortestRange
            byLength[i].lows.append(row.low)
            byLength[i].highs.append(row.high)
            byLength[i].attributes.append(row.attributes)
        }
        self.byLength = byLength
        attributes = table.attributes
    }

    /// The attributes of the most specific range that holds `digits` (the first digits of a card
    /// number, 6 to 19 of them), or nil. Not digits: nil.
    public func lookup(_ digits: some Collection<UInt8>) -> CardAttributes? {
        guard digits.count >= Self.shortestRange else { return nil }
        var value: UInt64 = 0
        var length = 0
        for byte in digits.prefix(Self.longestRange) {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            value = value &* 10 &+ UInt64(byte - UInt8(ascii: "0"))
            length += 1
        }
        var key = value
        for length in stride(from: length, through: Self.shortestRange, by: -1) {
            defer { key /= 10 }  // the query's first `length - 1` digits, for the next turn
            let ranges = byLength[length - Self.shortestRange]
            guard !ranges.lows.isEmpty else { continue }
            // The last range whose low is at most the key.
            var lo = 0
            var hi = ranges.lows.count
            while lo < hi {
                let mid = (lo + hi) / 2
                if ranges.lows[mid] <= key { lo = mid + 1 } else { hi = mid }
            }
            if lo > 0, ranges.highs[lo - 1] >= key { return attributes[Int(ranges.attributes[lo - 1])] }
        }
        return nil
    }

    public func lookup(_ digits: String) -> CardAttributes? { lookup(Array(digits.utf8)) }
}
