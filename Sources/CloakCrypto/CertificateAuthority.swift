import COpenSSL
import Foundation

/// The egress door's certificate authority: an ECDSA P-256 CA that signs a leaf certificate for
/// each upstream host the forward proxy intercepts. Clients trust its certificate (`cloak egress
/// ca` prints it); its key stays in a 0600 file next to the vault keys.
///
/// ```swift
/// let ca = try CertificateAuthority.loadOrCreate(certificate: "data/egress-ca.pem", key: "data/egress-ca-key.pem")
/// let leaf = try ca.issue(host: "api.stripe.com")   // PEM chain and key for that host
/// ```
package final class CertificateAuthority: @unchecked Sendable {
    // Made once and only read afterwards (signing reads the key and certificate).
    private let certificate: OpaquePointer  // X509
    private let key: OpaquePointer  // EVP_PKEY
    /// One key for every leaf of this process: a leaf is a name, not a secret of its own.
    private let leafKey: OpaquePointer
    /// The CA certificate, PEM.
    package let certificatePEM: [UInt8]
    private let leafKeyPEM: [UInt8]

    /// A leaf certificate chain (leaf then CA) and its key, PEM.
    package struct Leaf: Sendable {
        package let certificateChainPEM: [UInt8]
        package let privateKeyPEM: [UInt8]
    }

    /// Takes ownership of `certificate` and `key` only when it succeeds.
    private init(certificate: OpaquePointer, key: OpaquePointer) throws(CryptoError) {
        let leafKey = try Self.generateKey()
        do throws(CryptoError) {
            certificatePEM = try Self.pem { PEM_write_bio_X509($0, certificate) }
            leafKeyPEM = try Self.pem { PEM_write_bio_PrivateKey($0, leafKey, nil, nil, 0, nil, nil) }
        } catch {
            EVP_PKEY_free(leafKey)
            throw error
        }
        self.certificate = certificate
        self.key = key
        self.leafKey = leafKey
    }

    deinit {
        X509_free(certificate)
        EVP_PKEY_free(key)
        EVP_PKEY_free(leafKey)
    }

    /// Loads the CA from its two PEM files; when neither exists, makes a new one (10 years) and
    /// writes them (the key 0600, never replacing a file). One file without the other is refused:
    /// a lost key must not silently become a new CA that clients do not trust. A key file group
    /// or others may read or write is refused too, with the `chmod 600` that fixes it.
    package static func loadOrCreate(certificate certPath: String, key keyPath: String) throws(CryptoError)
        -> CertificateAuthority
    {
        let fm = FileManager.default
        switch (fm.fileExists(atPath: certPath), fm.fileExists(atPath: keyPath)) {
        case (true, true):
            let keyText: [UInt8]
            do throws(SecretFile.ReadFailure) {
                keyText = try SecretFile.read(keyPath)
            } catch {
                throw CryptoError("the egress CA key: \(error.message(path: keyPath))")
            }
            guard let certText = fm.contents(atPath: certPath) else {
                throw CryptoError("cannot read the egress CA certificate \(certPath)")
            }
            guard let cert = read(Array(certText), { PEM_read_bio_X509($0, nil, nil, nil) }) else {
                throw CryptoError("\(certPath) holds no PEM certificate")
            }
            // An encrypted key is refused, never prompted for: OpenSSL's default would ask for a
            // passphrase on the terminal and wait.
            guard let key = read(keyText, { PEM_read_bio_PrivateKey($0, nil, { _, _, _, _ in 0 }, nil) }) else {
                X509_free(cert)
                throw CryptoError("\(keyPath) holds no unencrypted PEM private key")
            }
            guard X509_check_private_key(cert, key) == 1 else {
                X509_free(cert)
                EVP_PKEY_free(key)
                ERR_clear_error()
                throw CryptoError("the egress CA key \(keyPath) does not match \(certPath)")
            }
            return try CertificateAuthority(certificate: cert, key: key)
        case (false, false):
            let ca = try create()
            try write(ca.keyPEM(), to: keyPath, mode: 0o600)
            try write(ca.certificatePEM, to: certPath, mode: 0o644)
            return ca
        default:
            throw CryptoError(
                "only one of \(certPath) and \(keyPath) exists: restore the other, or remove both to make a new egress CA"
            )
        }
    }

    /// A new CA in memory.
    package static func create(commonName: String = "Cloak egress CA") throws(CryptoError) -> CertificateAuthority {
        let key = try generateKey()
        guard let cert = X509_new() else {
            EVP_PKEY_free(key)
            throw CryptoError("X509_new failed")
        }
        do throws(CryptoError) {
            try fill(cert, subject: commonName, publicKey: key, days: 3650)
            X509_set_issuer_name(cert, X509_get_subject_name(cert))
            try addExtensions(
                cert, issuer: cert,
                [
                    (NID_basic_constraints, "critical,CA:TRUE,pathlen:0"),
                    (NID_key_usage, "critical,keyCertSign,cRLSign"),
                    (NID_subject_key_identifier, "hash"),
                ])
            guard X509_sign(cert, key, EVP_sha256()) > 0 else { throw CryptoError("signing the CA certificate failed") }
            return try CertificateAuthority(certificate: cert, key: key)
        } catch {
            X509_free(cert)
            EVP_PKEY_free(key)
            throw error
        }
    }

    /// A leaf certificate for `host` (a DNS name or an IP address), valid for 397 days.
    package func issue(host: String) throws(CryptoError) -> Leaf {
        guard !host.isEmpty, host.utf8.count <= 253,
            host.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: ",") })
        else {
            throw CryptoError("not a host name")
        }
        guard let cert = X509_new() else { throw CryptoError("X509_new failed") }
        defer { X509_free(cert) }
        try Self.fill(cert, subject: host, publicKey: leafKey, days: 397)
        X509_set_issuer_name(cert, X509_get_subject_name(certificate))
        var v4 = in_addr(), v6 = in6_addr()
        let isAddress = inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
        try Self.addExtensions(
            cert, issuer: certificate,
            [
                (NID_basic_constraints, "critical,CA:FALSE"), (NID_key_usage, "critical,digitalSignature"),
                (NID_ext_key_usage, "serverAuth"), (NID_subject_alt_name, isAddress ? "IP:\(host)" : "DNS:\(host)"),
                (NID_subject_key_identifier, "hash"), (NID_authority_key_identifier, "keyid:always"),
            ])
        guard X509_sign(cert, key, EVP_sha256()) > 0 else { throw CryptoError("signing the leaf certificate failed") }
        let leafPEM = try Self.pem { PEM_write_bio_X509($0, cert) }
        return Leaf(certificateChainPEM: leafPEM + certificatePEM, privateKeyPEM: leafKeyPEM)
    }

    private func keyPEM() throws(CryptoError) -> [UInt8] {
        try Self.pem { [key] in PEM_write_bio_PrivateKey($0, key, nil, nil, 0, nil, nil) }
    }

    // MARK: OpenSSL helpers

    private static func generateKey() throws(CryptoError) -> OpaquePointer {
        guard let ctx = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else { throw CryptoError("no EC key support") }
        defer { EVP_PKEY_CTX_free(ctx) }
        try check(EVP_PKEY_keygen_init(ctx), "EVP_PKEY_keygen_init")
        try check(EVP_PKEY_CTX_set_group_name(ctx, "P-256"), "EVP_PKEY_CTX_set_group_name")
        var key: OpaquePointer?
        try check(EVP_PKEY_generate(ctx, &key), "EVP_PKEY_generate")
        guard let key else { throw CryptoError("EVP_PKEY_generate gave no key") }
        return key
    }

    private static func fill(_ cert: OpaquePointer, subject: String, publicKey: OpaquePointer, days: Int)
        throws(CryptoError)
    {
        try check(X509_set_version(cert, 2), "X509_set_version")
        // A random 128-bit serial (positive).
        var serial = SecureRandom.bytes(16)
        serial[0] &= 0x7F
        guard let bn = BN_bin2bn(serial, Int32(serial.count), nil) else { throw CryptoError("BN_bin2bn failed") }
        defer { BN_free(bn) }
        guard BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert)) != nil else { throw CryptoError("serial failed") }
        X509_gmtime_adj(X509_getm_notBefore(cert), -3600)
        X509_gmtime_adj(X509_getm_notAfter(cert), days * 86_400)
        try check(X509_set_pubkey(cert, publicKey), "X509_set_pubkey")
        guard let name = X509_NAME_new() else { throw CryptoError("X509_NAME_new failed") }
        defer { X509_NAME_free(name) }
        let cn = Array(subject.utf8.prefix(64))
        try check(
            X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, cn, Int32(cn.count), -1, 0),
            "X509_NAME_add_entry_by_txt")
        try check(X509_set_subject_name(cert, name), "X509_set_subject_name")
    }

    private static func addExtensions(_ cert: OpaquePointer, issuer: OpaquePointer, _ extensions: [(Int32, String)])
        throws(CryptoError)
    {
        var ctx = X509V3_CTX()
        X509V3_set_ctx(&ctx, issuer, cert, nil, nil, 0)
        for (nid, value) in extensions {
            guard let ext = X509V3_EXT_conf_nid(nil, &ctx, nid, value) else {
                ERR_clear_error()
                throw CryptoError("cannot make certificate extension \(nid)")
            }
            defer { X509_EXTENSION_free(ext) }
            try check(X509_add_ext(cert, ext, -1), "X509_add_ext")
        }
    }

    private static func pem(_ write: (OpaquePointer) -> Int32) throws(CryptoError) -> [UInt8] {
        guard let bio = BIO_new(BIO_s_mem()) else { throw CryptoError("BIO_new failed") }
        defer { BIO_free(bio) }
        guard write(bio) == 1 else { throw CryptoError("PEM encoding failed") }
        var pointer: UnsafeMutablePointer<CChar>?
        let length = BIO_ctrl(bio, BIO_CTRL_INFO, 0, &pointer)
        guard let pointer, length > 0 else { throw CryptoError("PEM encoding failed") }
        return pointer.withMemoryRebound(to: UInt8.self, capacity: length) {
            Array(UnsafeBufferPointer(start: $0, count: length))
        }
    }

    private static func read<T>(_ pem: [UInt8], _ body: (OpaquePointer) -> T?) -> T? {
        let bio = pem.withUnsafeBytes { BIO_new_mem_buf($0.baseAddress, Int32($0.count)) }
        guard let bio else { return nil }
        defer { BIO_free(bio) }
        let out = body(bio)
        ERR_clear_error()
        return out
    }

    private static func write(_ bytes: [UInt8], to path: String, mode: mode_t) throws(CryptoError) {
        do {
            try SecretFile.write(bytes, to: path, mode: mode)
        } catch .exists {
            throw CryptoError("\(path) already exists; refusing to overwrite it")
        } catch {
            throw CryptoError("cannot write \(path)")
        }
    }
}
