import COpenSSL

/// A failure inside OpenSSL. Never carries key material or plaintext.
package struct CryptoError: Error, Sendable, Equatable, CustomStringConvertible {
    package let description: String
    init(_ description: String) { self.description = description }

    package static let authenticationFailed = CryptoError(
        "authentication failed: ciphertext, tag, nonce or associated data altered")
}

/// The one funnel for OpenSSL return codes: 1 is success, anything else is an error.
@inline(__always)
func check(_ rc: Int32, _ what: @autoclosure () -> String) throws(CryptoError) {
    guard rc == 1 else {
        let code = ERR_get_error()
        ERR_clear_error()
        throw CryptoError("\(what()) failed (OpenSSL error \(code))")
    }
}

/// Compares in time independent of where the inputs differ.
package func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    guard a.count == b.count else { return false }
    if a.isEmpty { return true }
    return a.withUnsafeBytes { pa in
        b.withUnsafeBytes { pb in CRYPTO_memcmp(pa.baseAddress, pb.baseAddress, a.count) == 0 }
    }
}

/// Overwrites `bytes` with zeros in a way the compiler does not drop (key material once used).
package func wipe(_ bytes: inout [UInt8]) {
    bytes.withUnsafeMutableBytes { OPENSSL_cleanse($0.baseAddress, $0.count) }
}
