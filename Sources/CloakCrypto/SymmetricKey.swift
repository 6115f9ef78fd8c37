/// Key material. Its description is redacted so it can never be logged by accident.
package struct SymmetricKey: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    private let bytes: [UInt8]

    package init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    package var count: Int { bytes.count }

    package var description: String { "SymmetricKey(\(bytes.count * 8) bits, redacted)" }
    package var debugDescription: String { description }
    /// No children: `dump` and debuggers show the description, never the bytes.
    package var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }

    package func withBytes<R, E: Error>(_ body: (UnsafePointer<UInt8>) throws(E) -> R) throws(E) -> R {
        let copy = bytes
        return try copy.withUnsafeBufferPointer { buffer throws(E) -> R in try body(buffer.baseAddress!) }
    }

    /// The raw bytes, for derivation (HMAC) and persistence (the key file) only.
    package var rawBytes: [UInt8] { bytes }

    package static func == (a: SymmetricKey, b: SymmetricKey) -> Bool { constantTimeEquals(a.bytes, b.bytes) }

    /// A new random key of `count` bytes.
    package static func random(count: Int = 32) -> SymmetricKey { SymmetricKey(SecureRandom.bytes(count)) }

    /// A subkey for one purpose: HMAC-SHA-256(self, label).
    package func derive(_ label: String) -> SymmetricKey {
        SymmetricKey(Digest.hmacSHA256(key: bytes, Array(label.utf8)))
    }
}
