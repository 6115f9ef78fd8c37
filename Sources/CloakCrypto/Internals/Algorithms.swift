import COpenSSL

/// The OpenSSL algorithms Cloak uses, fetched from the default provider once.
///
/// Passing `EVP_sha256()` or `EVP_aes_256_gcm()` to an init call, or using the one-shot `HMAC()`,
/// makes OpenSSL 3 look the algorithm up in its provider store again on every call (a lock and
/// name matching): callgrind counted about 33,000 instructions per one-shot HMAC-SHA-256 of a
/// short message, several times the hashing itself. A fetched algorithm is immutable and shared
/// by every thread.
enum Algorithms {
    nonisolated(unsafe) static let sha256: OpaquePointer = fetchDigest("SHA256")
    nonisolated(unsafe) static let sha384: OpaquePointer = fetchDigest("SHA384")
    nonisolated(unsafe) static let sha512: OpaquePointer = fetchDigest("SHA512")
    nonisolated(unsafe) static let aes256GCM: OpaquePointer = fetchCipher("AES-256-GCM")

    private static func fetchDigest(_ name: String) -> OpaquePointer {
        guard let md = EVP_MD_fetch(nil, name, nil) else { fatalError("OpenSSL has no \(name) digest") }
        return md
    }

    private static func fetchCipher(_ name: String) -> OpaquePointer {
        guard let cipher = EVP_CIPHER_fetch(nil, name, nil) else { fatalError("OpenSSL has no \(name) cipher") }
        return cipher
    }
}
