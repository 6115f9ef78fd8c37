/// Wall-clock time as `2026-11-23T01:02:03.456Z`, the `ts` of every log line.
///
/// The calendar date comes from the day number by integer arithmetic
/// (``CalendarDate/civil(daysSince1970:)``), not from `gmtime_r`, which takes the C library's
/// time-zone lock on every call: the access log writes one timestamp per request. Pure: the
/// clock is read by the service (`UTCTimestamp.now()`), which writes the lines.
public enum UTCTimestamp {
    /// Bytes in a timestamp.
    public static let length = 24

    /// Writes the ``length`` bytes of the timestamp at `out`. Years outside 0–9999 are clamped.
    public static func write(seconds: Int, milliseconds: Int, to out: UnsafeMutablePointer<UInt8>) {
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - days * 86_400
        let (year, month, day) = CalendarDate.civil(daysSince1970: days)
        func put(_ value: Int, _ digits: Int, at offset: Int) {
            ZeroPadded.write(value, width: digits, to: out + offset)
        }
        put(min(max(year, 0), 9999), 4, at: 0)
        out[4] = UInt8(ascii: "-")
        put(month, 2, at: 5)
        out[7] = UInt8(ascii: "-")
        put(day, 2, at: 8)
        out[10] = UInt8(ascii: "T")
        put(secondOfDay / 3600, 2, at: 11)
        out[13] = UInt8(ascii: ":")
        put(secondOfDay / 60 % 60, 2, at: 14)
        out[16] = UInt8(ascii: ":")
        put(secondOfDay % 60, 2, at: 17)
        out[19] = UInt8(ascii: ".")
        put(min(max(milliseconds, 0), 999), 3, at: 20)
        out[23] = UInt8(ascii: "Z")
    }

    /// The timestamp of `seconds` and `milliseconds` as a string.
    public static func string(seconds: Int, milliseconds: Int) -> String {
        String(unsafeUninitializedCapacity: length) { buffer in
            write(seconds: seconds, milliseconds: milliseconds, to: buffer.baseAddress!)
            return length
        }
    }
}
