/// Writes one JSON log line into memory it does not own (the access log's stack buffer), byte
/// by byte: no array growth, no intermediate strings. Past the end of the memory it writes
/// nothing more and says so (``overflowed``); the caller then builds the line another way.
struct LogLineWriter {
    private let start: UnsafeMutablePointer<UInt8>
    private let capacity: Int
    private(set) var count = 0
    private(set) var overflowed = false

    init(_ buffer: UnsafeMutableBufferPointer<UInt8>) {
        start = buffer.baseAddress!
        capacity = buffer.count
    }

    /// The bytes written so far.
    var written: UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(start: start, count: count) }

    /// Reserves `n` bytes and returns where they start, or nil (and marks the overflow).
    private mutating func claim(_ n: Int) -> UnsafeMutablePointer<UInt8>? {
        guard !overflowed, capacity - count >= n else {
            overflowed = true
            return nil
        }
        defer { count += n }
        return start + count
    }

    /// Literal text, already valid JSON (member names with their quotes and punctuation).
    mutating func raw(_ text: StaticString) {
        guard let at = claim(text.utf8CodeUnitCount) else { return }
        at.update(from: text.utf8Start, count: text.utf8CodeUnitCount)
    }

    /// A non-negative decimal integer (a negative one is written as 0).
    mutating func decimal(_ value: Int) {
        var v = max(value, 0)
        var digits = 1
        var scale = 10
        while v >= scale, digits < 19 {
            digits += 1
            scale &*= 10
        }
        guard let at = claim(digits) else { return }
        for i in stride(from: digits - 1, through: 0, by: -1) {
            at[i] = UInt8(48 + v % 10)
            v /= 10
        }
    }

    /// The body of a JSON string (no quotes): `"`, `\` and control bytes escaped.
    mutating func escaped(_ text: String) {
        var text = text
        text.withUTF8 { utf8 in
            if !utf8.contains(where: Self.needsEscape) {
                guard let at = claim(utf8.count) else { return }
                if let base = utf8.baseAddress { at.update(from: base, count: utf8.count) }
                return
            }
            for byte in utf8 {
                if !Self.needsEscape(byte) {
                    guard let at = claim(1) else { return }
                    at.pointee = byte
                } else {
                    guard let at = claim(6) else { return }
                    let hex: StaticString = "0123456789abcdef"
                    at[0] = 0x5C
                    at[1] = UInt8(ascii: "u")
                    at[2] = UInt8(ascii: "0")
                    at[3] = UInt8(ascii: "0")
                    at[4] = hex.utf8Start[Int(byte >> 4)]
                    at[5] = hex.utf8Start[Int(byte & 0xF)]
                }
            }
        }
    }

    private static func needsEscape(_ byte: UInt8) -> Bool { byte < 0x20 || byte == 0x22 || byte == 0x5C }

    /// The current wall-clock time (``UTCTimestamp``), without quotes.
    mutating func timestamp() {
        guard let at = claim(UTCTimestamp.length) else { return }
        let now = UTCTimestamp.now()
        UTCTimestamp.write(seconds: now.seconds, milliseconds: now.milliseconds, to: at)
    }
}
