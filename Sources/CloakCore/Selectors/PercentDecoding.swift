/// `%XX` decoding, shared by the router (path segments) and form bodies.
public enum PercentDecoding {
    /// `raw` with each `%XX` turned into its byte (and `+` into a space when `plusAsSpace`, as
    /// forms write it); nil when an escape is malformed or the bytes are not UTF-8.
    public static func decode<Bytes: Collection<UInt8>>(_ raw: Bytes, plusAsSpace: Bool) -> String? {
        var out: [UInt8] = []
        out.reserveCapacity(raw.count)
        var i = raw.startIndex
        while i < raw.endIndex {
            let b = raw[i]
            i = raw.index(after: i)
            guard b == UInt8(ascii: "%") else {
                out.append(plusAsSpace && b == UInt8(ascii: "+") ? 0x20 : b)
                continue
            }
            guard i != raw.endIndex, let high = hex(raw[i]) else { return nil }
            i = raw.index(after: i)
            guard i != raw.endIndex, let low = hex(raw[i]) else { return nil }
            i = raw.index(after: i)
            out.append(high << 4 | low)
        }
        return UTF8Validation.string(out)
    }

    private static func hex(_ b: UInt8) -> UInt8? {
        switch b {
        case 48...57: return b - 48
        case 65...70: return b - 55
        case 97...102: return b - 87
        default: return nil
        }
    }
}
