import COpenSSL
import Foundation

/// One asymmetric key (`EVP_PKEY`) read from PEM: a private key (PKCS#8, or the traditional RSA
/// and EC forms), a public key (SPKI) or the public key of an X.509 certificate. It signs and
/// decrypts when private, verifies and encrypts either way. An `EVP_PKEY` is safe to share
/// between threads for these operations; each call makes its own context.
package final class AsymmetricKey: PrivateKeyOperations, @unchecked Sendable {
    private let key: OpaquePointer
    package let kind: AsymmetricKeyKind
    package let bits: Int
    /// Whether the PEM held a private key (else only its public half is here).
    package let isPrivate: Bool

    private init(key: OpaquePointer, isPrivate: Bool) throws(CryptoError) {
        self.key = key
        self.isPrivate = isPrivate
        if EVP_PKEY_is_a(key, "RSA") == 1 {
            kind = .rsa
            bits = Int(EVP_PKEY_get_bits(key))
        } else if EVP_PKEY_is_a(key, "ED25519") == 1 {
            kind = .ed25519
            bits = 0
        } else if EVP_PKEY_is_a(key, "EC") == 1, Self.curveName(key) == "prime256v1" {
            kind = .ecP256
            bits = 0
        } else {
            EVP_PKEY_free(key)
            throw CryptoError("the key is neither RSA, EC P-256 nor Ed25519")
        }
    }

    deinit { EVP_PKEY_free(key) }

    /// The key in `pem`: the first PEM block decides what it is. Never quotes the PEM.
    package static func read(pem: [UInt8]) throws(CryptoError) -> AsymmetricKey {
        let text = String(decoding: pem, as: UTF8.self)
        let isPrivate = text.contains("PRIVATE KEY-----")
        let isCertificate = text.contains("-----BEGIN CERTIFICATE-----")
        guard isPrivate || isCertificate || text.contains("-----BEGIN PUBLIC KEY-----") else {
            throw CryptoError("expected a PEM private key, public key or certificate")
        }
        if text.contains("ENCRYPTED PRIVATE KEY-----") || text.contains("Proc-Type: 4,ENCRYPTED") {
            throw CryptoError("the private key is encrypted with a passphrase: store it unencrypted, mode 0600")
        }
        let parsed: OpaquePointer? = pem.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            // A passphrase callback that gives none: without one OpenSSL would ask the terminal.
            let noPassphrase:
                @convention(c) (UnsafeMutablePointer<CChar>?, Int32, Int32, UnsafeMutableRawPointer?)
                    -> Int32 = { _, _, _, _ in 0 }
            if isPrivate { return PEM_read_bio_PrivateKey(bio, nil, noPassphrase, nil) }
            if isCertificate {
                guard let certificate = PEM_read_bio_X509(bio, nil, noPassphrase, nil) else { return nil }
                defer { X509_free(certificate) }
                return X509_get_pubkey(certificate)
            }
            return PEM_read_bio_PUBKEY(bio, nil, noPassphrase, nil)
        }
        ERR_clear_error()
        guard let parsed else { throw CryptoError("the PEM does not hold a key OpenSSL can read") }
        return try AsymmetricKey(key: parsed, isPrivate: isPrivate)
    }

    /// A new private key of `kind` (RSA of `bits`), made for one use and thrown away: the route
    /// inspector signs with one of the configured key's kind, never with that key.
    package static func generate(_ kind: AsymmetricKeyKind, bits: Int = 2048) throws(CryptoError) -> AsymmetricKey {
        let name =
            switch kind {
            case .rsa: "RSA"
            case .ecP256: "EC"
            case .ed25519: "ED25519"
            }
        guard let ctx = EVP_PKEY_CTX_new_from_name(nil, name, nil) else {
            throw CryptoError("OpenSSL cannot make \(kind.rawValue) keys")
        }
        defer { EVP_PKEY_CTX_free(ctx) }
        var ok = EVP_PKEY_keygen_init(ctx) == 1
        switch kind {
        case .rsa: ok = ok && EVP_PKEY_CTX_set_rsa_keygen_bits(ctx, Int32(max(bits, 2048))) == 1
        case .ecP256: ok = ok && EVP_PKEY_CTX_set_group_name(ctx, "P-256") == 1
        case .ed25519: break
        }
        var key: OpaquePointer?
        guard ok, EVP_PKEY_generate(ctx, &key) == 1, let key else {
            ERR_clear_error()
            throw CryptoError("OpenSSL could not make a \(kind.rawValue) key")
        }
        return try AsymmetricKey(key: key, isPrivate: true)
    }

    // MARK: Signatures

    package func sign(_ message: [UInt8], _ algorithm: SignatureAlgorithm) throws(CryptoError) -> [UInt8] {
        guard isPrivate else { throw CryptoError("a public key cannot sign") }
        if let refusal = refusal(for: algorithm) { throw CryptoError(refusal) }
        guard let ctx = EVP_MD_CTX_new() else { throw CryptoError("EVP_MD_CTX_new failed") }
        defer { EVP_MD_CTX_free(ctx) }
        var pctx: OpaquePointer?
        try check(EVP_DigestSignInit(ctx, &pctx, Self.digest(algorithm), nil, key), "EVP_DigestSignInit")
        try Self.configure(pctx, algorithm)
        var length = 0
        var rc = message.withUnsafeBytes { m in EVP_DigestSign(ctx, nil, &length, m.baseAddress, m.count) }
        try check(rc, "EVP_DigestSign")
        var signature = [UInt8](repeating: 0, count: length)
        rc = message.withUnsafeBytes { m in
            signature.withUnsafeMutableBytes { s in
                EVP_DigestSign(ctx, s.baseAddress?.assumingMemoryBound(to: UInt8.self), &length, m.baseAddress, m.count)
            }
        }
        try check(rc, "EVP_DigestSign")
        signature.removeLast(signature.count - length)
        return algorithm == .ecdsaP256SHA256 ? try Self.rawECDSA(der: signature) : signature
    }

    /// Whether `signature` is this key's over `message` (tests and the reference benchmark).
    package func verify(_ signature: [UInt8], over message: [UInt8], _ algorithm: SignatureAlgorithm) -> Bool {
        guard refusal(for: algorithm) == nil, let ctx = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(ctx) }
        var pctx: OpaquePointer?
        guard EVP_DigestVerifyInit(ctx, &pctx, Self.digest(algorithm), nil, key) == 1,
            (try? Self.configure(pctx, algorithm)) != nil
        else { return false }
        let der = algorithm == .ecdsaP256SHA256 ? Self.derECDSA(raw: signature) : signature
        let ok = message.withUnsafeBytes { m in
            der.withUnsafeBytes { s in EVP_DigestVerify(ctx, s.baseAddress, s.count, m.baseAddress, m.count) }
        }
        ERR_clear_error()
        return ok == 1
    }

    private static func digest(_ algorithm: SignatureAlgorithm) -> OpaquePointer? {
        switch algorithm {
        case .rsaPKCS1SHA256, .rsaPSSSHA256, .ecdsaP256SHA256: Algorithms.sha256
        case .rsaPSSSHA512: Algorithms.sha512
        case .ed25519: nil
        }
    }

    private static func configure(_ pctx: OpaquePointer?, _ algorithm: SignatureAlgorithm) throws(CryptoError) {
        switch algorithm {
        case .rsaPSSSHA256, .rsaPSSSHA512:
            try check(EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING), "set PSS padding")
            // The salt as long as the digest (RFC 9421 3.3.1, RFC 7518 3.5); MGF1 uses the same
            // digest by default.
            try check(EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_DIGEST), "set PSS salt length")
        case .rsaPKCS1SHA256:
            try check(EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PADDING), "set PKCS#1 padding")
        case .ecdsaP256SHA256, .ed25519:
            break
        }
    }

    // MARK: RSA-OAEP (SHA-256, MGF1 SHA-256)

    package func encryptOAEPSHA256(_ plaintext: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard kind == .rsa else { throw CryptoError("RSA-OAEP needs an RSA key; the key is \(kind.rawValue)") }
        return try crypt(plaintext, encrypt: true)
    }

    package func decryptOAEPSHA256(_ ciphertext: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard isPrivate else { throw CryptoError("a public key cannot decrypt") }
        guard kind == .rsa else { throw CryptoError("RSA-OAEP needs an RSA key; the key is \(kind.rawValue)") }
        return try crypt(ciphertext, encrypt: false)
    }

    private func crypt(_ input: [UInt8], encrypt: Bool) throws(CryptoError) -> [UInt8] {
        guard let ctx = EVP_PKEY_CTX_new_from_pkey(nil, key, nil) else { throw CryptoError("EVP_PKEY_CTX_new failed") }
        defer { EVP_PKEY_CTX_free(ctx) }
        let what = encrypt ? "RSA-OAEP encryption" : "RSA-OAEP decryption"
        try check(encrypt ? EVP_PKEY_encrypt_init(ctx) : EVP_PKEY_decrypt_init(ctx), what)
        try check(EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_OAEP_PADDING), what)
        try check(EVP_PKEY_CTX_set_rsa_oaep_md(ctx, Algorithms.sha256), what)
        try check(EVP_PKEY_CTX_set_rsa_mgf1_md(ctx, Algorithms.sha256), what)
        var length = 0
        var rc = input.withUnsafeBytes { i in
            let p = i.baseAddress?.assumingMemoryBound(to: UInt8.self)
            return encrypt
                ? EVP_PKEY_encrypt(ctx, nil, &length, p, i.count) : EVP_PKEY_decrypt(ctx, nil, &length, p, i.count)
        }
        try check(rc, what)
        var output = [UInt8](repeating: 0, count: length)
        rc = input.withUnsafeBytes { i in
            let p = i.baseAddress?.assumingMemoryBound(to: UInt8.self)
            return output.withUnsafeMutableBufferPointer { o in
                encrypt
                    ? EVP_PKEY_encrypt(ctx, o.baseAddress, &length, p, i.count)
                    : EVP_PKEY_decrypt(ctx, o.baseAddress, &length, p, i.count)
            }
        }
        try check(rc, what)
        output.removeLast(output.count - length)
        return output
    }

    // MARK: ECDSA signature forms

    private static func curveName(_ key: OpaquePointer) -> String {
        var name = [CChar](repeating: 0, count: 64)
        var length = 0
        guard EVP_PKEY_get_utf8_string_param(key, OSSL_PKEY_PARAM_GROUP_NAME, &name, name.count, &length) == 1 else {
            return ""
        }
        return String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// DER `ECDSA-Sig-Value` to `r ‖ s`, each left-padded to 32 bytes.
    private static func rawECDSA(der: [UInt8]) throws(CryptoError) -> [UInt8] {
        let signature: OpaquePointer? = der.withUnsafeBufferPointer { d in
            var p: UnsafePointer<UInt8>? = d.baseAddress
            return d2i_ECDSA_SIG(nil, &p, d.count)
        }
        guard let signature else { throw CryptoError("OpenSSL made an unreadable ECDSA signature") }
        defer { ECDSA_SIG_free(signature) }
        var raw = [UInt8](repeating: 0, count: 64)
        let r = ECDSA_SIG_get0_r(signature), s = ECDSA_SIG_get0_s(signature)
        let ok = raw.withUnsafeMutableBufferPointer { out in
            BN_bn2binpad(r, out.baseAddress, 32) == 32 && BN_bn2binpad(s, out.baseAddress! + 32, 32) == 32
        }
        guard ok else { throw CryptoError("ECDSA signature out of range") }
        return raw
    }

    /// `r ‖ s` to DER; an ill-sized input gives bytes that never verify.
    private static func derECDSA(raw: [UInt8]) -> [UInt8] {
        guard raw.count == 64, let signature = ECDSA_SIG_new() else { return [] }
        defer { ECDSA_SIG_free(signature) }
        let r = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, 32, nil) }
        let s = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress! + 32, 32, nil) }
        guard ECDSA_SIG_set0(signature, r, s) == 1 else {
            BN_free(r)
            BN_free(s)
            return []
        }
        var out: UnsafeMutablePointer<UInt8>?
        let length = i2d_ECDSA_SIG(signature, &out)
        guard length > 0, let out else { return [] }
        defer { CRYPTO_free(out, #file, #line) }
        return Array(UnsafeBufferPointer(start: out, count: Int(length)))
    }
}

extension AsymmetricKey {
    /// The key in the PEM file at `path`. A file holding a private key is refused when group or
    /// others have any access to it (as ssh refuses one), judged on the descriptor read.
    package static func read(file path: String) throws(CryptoError) -> AsymmetricKey {
        var loose: mode_t?
        var pem: [UInt8]
        do {
            pem = try SecretFile.read(path) { mode in if mode & 0o077 != 0 { loose = mode & 0o7777 } }
        } catch {
            throw CryptoError(error.message(path: path))
        }
        defer { wipe(&pem) }
        let key = try read(pem: pem)
        if key.isPrivate, let loose {
            throw CryptoError(SecretFile.ReadFailure.looseMode(loose).message(path: path))
        }
        return key
    }
}
