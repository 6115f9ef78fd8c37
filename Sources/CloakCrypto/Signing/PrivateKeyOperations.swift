/// The asymmetric algorithms a route step (issue 49) signs or decrypts with.
package enum SignatureAlgorithm: String, Sendable, CaseIterable {
    /// RSASSA-PKCS1-v1_5 with SHA-256 (RFC 9421 `rsa-v1_5-sha256`, JWS `RS256`, OAuth 1 `RSA-SHA256`).
    case rsaPKCS1SHA256
    /// RSASSA-PSS with SHA-256, MGF1 SHA-256, a 32-byte salt (JWS `PS256`).
    case rsaPSSSHA256
    /// RSASSA-PSS with SHA-512, MGF1 SHA-512, a 64-byte salt (RFC 9421 `rsa-pss-sha512`).
    case rsaPSSSHA512
    /// ECDSA on P-256 with SHA-256, the signature as `r ‖ s`, 32 bytes each (RFC 9421
    /// `ecdsa-p256-sha256`, JWS `ES256`): never DER.
    case ecdsaP256SHA256
    /// Ed25519 (RFC 8032), over the message itself.
    case ed25519

    /// The kind of key the algorithm needs.
    package var keyKind: AsymmetricKeyKind {
        switch self {
        case .rsaPKCS1SHA256, .rsaPSSSHA256, .rsaPSSSHA512: .rsa
        case .ecdsaP256SHA256: .ecP256
        case .ed25519: .ed25519
        }
    }
}

/// What an asymmetric key is, as far as a route step cares.
package enum AsymmetricKeyKind: String, Sendable {
    case rsa = "RSA"
    case ecP256 = "EC P-256"
    case ed25519 = "Ed25519"
}

/// A private key a route step uses: in a PEM file (``AsymmetricKey``, OpenSSL) or on a PKCS#11
/// token (``PKCS11PrivateKey``, the token signs and decrypts; the key never leaves it). Both
/// are safe to use from any thread.
package protocol PrivateKeyOperations: AnyObject, Sendable {
    var kind: AsymmetricKeyKind { get }
    /// RSA keys' modulus size in bits; 0 for the others.
    var bits: Int { get }
    /// Signs `message` (the algorithm hashes it; Ed25519 signs it whole).
    func sign(_ message: [UInt8], _ algorithm: SignatureAlgorithm) throws(CryptoError) -> [UInt8]
    /// RSAES-OAEP with SHA-256 and MGF1 SHA-256, no label (JWE `RSA-OAEP-256`).
    func decryptOAEPSHA256(_ ciphertext: [UInt8]) throws(CryptoError) -> [UInt8]
}

extension PrivateKeyOperations {
    /// Why this key cannot do `algorithm`, or nil when it can (RSA keys of fewer than 2048
    /// bits are refused).
    package func refusal(for algorithm: SignatureAlgorithm) -> String? {
        guard kind == algorithm.keyKind else {
            return "the key is \(kind.rawValue); this algorithm needs \(algorithm.keyKind.rawValue)"
        }
        if kind == .rsa && bits < 2048 { return "the RSA key has \(bits) bits; at least 2048 are needed" }
        return nil
    }
}
