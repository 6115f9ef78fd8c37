import CloakCore
import CloakCrypto

/// A trace's id: 16 bytes, written as 32 lowercase hex digits (W3C Trace Context).
struct TraceID: Hashable, Sendable {
    /// The first and last 8 bytes, big-endian (the order the hex and the OTLP bytes have).
    var high: UInt64
    var low: UInt64

    var isValid: Bool { high != 0 || low != 0 }
    var hex: String {
        String(unsafeUninitializedCapacity: 32) { out in
            Hex.write(high, into: out, at: 0)
            Hex.write(low, into: out, at: 16)
            return 32
        }
    }

    /// A new random id (never all zero).
    static func random() -> TraceID {
        var id = TraceID(high: 0, low: 0)
        repeat {
            withUnsafeMutableBytes(of: &id.high) { SecureRandom.fill($0) }
            withUnsafeMutableBytes(of: &id.low) { SecureRandom.fill($0) }
        } while !id.isValid
        return id
    }
}

/// A span's id: 8 bytes, written as 16 lowercase hex digits.
struct SpanID: Hashable, Sendable {
    var value: UInt64

    var isValid: Bool { value != 0 }
    var hex: String { Hex.digits(value) }

    static func random() -> SpanID {
        var id = SpanID(value: 0)
        repeat { withUnsafeMutableBytes(of: &id.value) { SecureRandom.fill($0) } } while !id.isValid
        return id
    }
}

/// What a span passes to its children and to the next service: its trace, its own id, whether
/// the trace is sampled, and the trace's `tracestate` (vendors' entries, carried unchanged).
///
/// `traceparent` is read as W3C Trace Context level 1 says: version `00` exactly 55
/// characters; a later version (not `ff`) at least that, its extra fields ignored; ids of
/// lowercase hex and not all zero. Anything else is no context at all, and the request starts
/// a trace of its own. A `tracestate` that is not a valid list (at most 32 `key=value` members,
/// 512 characters) is dropped and the `traceparent` kept.
struct TraceContext: Hashable, Sendable {
    var traceID: TraceID
    var spanID: SpanID
    var sampled: Bool
    var traceState: String?

    /// A new sampled trace's root: its trace and span ids from one draw.
    static func newTrace() -> TraceContext {
        var ids: (UInt64, UInt64, UInt64) = (0, 0, 0)
        repeat { withUnsafeMutableBytes(of: &ids) { SecureRandom.fill($0) } } while ids.0 | ids.1 == 0 || ids.2 == 0
        return TraceContext(traceID: TraceID(high: ids.0, low: ids.1), spanID: SpanID(value: ids.2), sampled: true)
    }

    /// `00-<trace-id>-<span-id>-<flags>`.
    var traceparent: String { "00-" + traceID.hex + "-" + spanID.hex + (sampled ? "-01" : "-00") }

    /// The context of `traceparent` (and `tracestate`), or nil when `traceparent` is not valid.
    init?(traceparent: String, tracestate: String? = nil) {
        let bytes = Array(traceparent.utf8)
        guard bytes.count >= 55, bytes[2] == UInt8(ascii: "-"), bytes[35] == UInt8(ascii: "-"),
            bytes[52] == UInt8(ascii: "-"),
            let version = Hex.value(bytes[0..<2]), version != 0xff,
            bytes.count == 55 || (version != 0 && bytes[55] == UInt8(ascii: "-")),
            let high = Hex.value(bytes[3..<19]), let low = Hex.value(bytes[19..<35]),
            let span = Hex.value(bytes[36..<52]), let flags = Hex.value(bytes[53..<55])
        else { return nil }
        let trace = TraceID(high: high, low: low)
        guard trace.isValid, span != 0 else { return nil }
        self.traceID = trace
        self.spanID = SpanID(value: span)
        self.sampled = flags & 1 == 1
        self.traceState = tracestate.flatMap { Self.isValidTraceState($0) ? $0 : nil }
    }

    init(traceID: TraceID, spanID: SpanID, sampled: Bool, traceState: String? = nil) {
        self.traceID = traceID
        self.spanID = spanID
        self.sampled = sampled
        self.traceState = traceState
    }

    /// W3C `tracestate`: 1 to 32 comma-separated `key=value` members (optional spaces or tabs
    /// around each), no key twice; 512 characters at most. A key is a simple key (a lowercase
    /// letter, then up to 255 of lowercase letters, digits and `_-*/`) or `tenant@system` (a
    /// tenant of up to 241 starting with a letter or digit, a system of up to 14 starting with a
    /// letter); a value is up to 256 printable ASCII characters but `,` and `=`, not ending in a space.
    static func isValidTraceState(_ text: String) -> Bool {
        guard !text.isEmpty, text.utf8.count <= 512 else { return false }
        let bytes = Array(text.utf8)
        var keys: Set<ArraySlice<UInt8>> = []
        for raw in bytes.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false) {
            var member = raw[...]
            while member.first == UInt8(ascii: " ") || member.first == UInt8(ascii: "\t") { member.removeFirst() }
            while member.last == UInt8(ascii: " ") || member.last == UInt8(ascii: "\t") { member.removeLast() }
            if member.isEmpty { continue }
            guard keys.count < 32, let equals = member.firstIndex(of: UInt8(ascii: "=")) else { return false }
            let key = member[member.startIndex..<equals]
            let value = member[(equals + 1)...]
            guard isValidKey(key), keys.insert(key).inserted, !value.isEmpty, value.count <= 256,
                value.allSatisfy({ $0 >= 0x20 && $0 <= 0x7e && $0 != UInt8(ascii: ",") && $0 != UInt8(ascii: "=") })
            else { return false }
        }
        return !keys.isEmpty
    }

    private static func isValidKey(_ key: ArraySlice<UInt8>) -> Bool {
        func isLetter(_ b: UInt8) -> Bool { (0x61...0x7a).contains(b) }
        func isKeyByte(_ b: UInt8) -> Bool {
            isLetter(b) || (0x30...0x39).contains(b) || b == UInt8(ascii: "_") || b == UInt8(ascii: "-")
                || b == UInt8(ascii: "*") || b == UInt8(ascii: "/")
        }
        guard let at = key.firstIndex(of: UInt8(ascii: "@")) else {
            return (1...256).contains(key.count) && isLetter(key[key.startIndex]) && key.allSatisfy(isKeyByte)
        }
        let tenant = key[key.startIndex..<at]
        let system = key[(at + 1)...]
        return (1...241).contains(tenant.count) && (1...14).contains(system.count)
            && (isLetter(tenant[tenant.startIndex]) || (0x30...0x39).contains(tenant[tenant.startIndex]))
            && isLetter(system[system.startIndex]) && tenant.allSatisfy(isKeyByte) && system.allSatisfy(isKeyByte)
    }
}
