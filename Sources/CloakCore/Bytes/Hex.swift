/// Lowercase hex: trace context's ids, digests and MACs as the service writes them.
public enum Hex {
    /// `bytes` as two lowercase digits each (a digest, a MAC).
    public static func string(_ bytes: [UInt8]) -> String {
        String(unsafeUninitializedCapacity: bytes.count * 2) { out in
            for (i, byte) in bytes.enumerated() {
                out[2 * i] = digit(byte >> 4)
                out[2 * i + 1] = digit(byte & 0xf)
            }
            return bytes.count * 2
        }
    }

    @inline(__always)
    private static func digit(_ nibble: UInt8) -> UInt8 { nibble < 10 ? nibble + 0x30 : nibble + 0x57 }

    /// `value` as 16 hex digits.
    public static func digits(_ value: UInt64) -> String {
        String(unsafeUninitializedCapacity: 16) { out in
            write(value, into: out, at: 0)
            return 16
        }
    }

    /// Writes `value`'s 16 hex digits at `offset`.
    public static func write(_ value: UInt64, into out: UnsafeMutableBufferPointer<UInt8>, at offset: Int) {
        precondition(offset >= 0 && out.count - offset >= 16, "Hex.write needs 16 bytes at the offset")
        for i in 0..<16 {
            let nibble = UInt8(truncatingIfNeeded: value >> (60 - 4 * UInt64(i))) & 0xf
            out[offset + i] = digit(nibble)
        }
    }

    /// The number lowercase `digits` (at most 16) spell; nil for any other byte.
    public static func value(_ digits: ArraySlice<UInt8>) -> UInt64? {
        var result: UInt64 = 0
        for byte in digits {
            let nibble: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = byte - UInt8(ascii: "a") + 10
            default: return nil
            }
            result = result << 4 | UInt64(nibble)
        }
        return result
    }
}
