/// Whether bytes are well-formed UTF-8, with the standard library's own decoder: what
/// `String(validating:as:)` answers, on every OS CloakCore runs on (that initializer needs the
/// Swift 6 runtime: iOS 18, macOS 15; apps import CloakCore down to iOS 15).
enum UTF8Validation {
    static func isValid<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> Bool {
        var parser = Unicode.UTF8.ForwardParser()
        var iterator = bytes.makeIterator()
        while true {
            switch parser.parseScalar(from: &iterator) {
            case .valid: continue
            case .emptyInput: return true
            case .error: return false
            }
        }
    }

    /// The text the bytes spell, or nil when they are not well-formed UTF-8.
    static func string<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> String? {
        isValid(bytes) ? String(decoding: bytes, as: UTF8.self) : nil
    }
}
