/// Decimal digits at a fixed width with zeros in front (`%0Nd`), written as bytes: the dates and
/// timestamps Cloak writes (log lines, the `Date` header, converted expiry dates).
public enum ZeroPadded {
    /// Writes the last `width` decimal digits of `value`'s magnitude at `out`.
    @inlinable
    public static func write(_ value: Int, width: Int, to out: UnsafeMutablePointer<UInt8>) {
        var rest = value.magnitude
        for i in stride(from: width - 1, through: 0, by: -1) {
            out[i] = UInt8(truncatingIfNeeded: 0x30 + rest % 10)
            rest /= 10
        }
    }
}
