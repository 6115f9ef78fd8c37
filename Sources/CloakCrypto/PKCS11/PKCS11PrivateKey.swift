import COpenSSL
import CPKCS11
import Foundation

/// A private key on a PKCS#11 token (RSA, EC P-256 or Ed25519), used through a logged-in
/// session: the token signs and decrypts; the key never leaves it. One session per key, used by
/// one thread at a time (a lock).
package final class PKCS11PrivateKey: PrivateKeyOperations, @unchecked Sendable {
    package let tokenLabel: String
    package let objectLabel: String
    package let kind: AsymmetricKeyKind
    /// The RSA modulus's size in bits; 0 for EC P-256 and Ed25519 keys.
    package let bits: Int
    /// The RSA modulus (big-endian), for OAEP unpadding of a block the token decrypted raw.
    let modulus: [UInt8]
    let module: PKCS11Module
    let session: CK_SESSION_HANDLE
    let handle: CK_OBJECT_HANDLE
    let lock = NSLock()

    private init(
        module: PKCS11Module, session: CK_SESSION_HANDLE, handle: CK_OBJECT_HANDLE, uri: PKCS11URI,
        kind: AsymmetricKeyKind, bits: Int, modulus: [UInt8]
    ) {
        self.modulus = modulus
        self.module = module
        self.session = session
        self.handle = handle
        self.tokenLabel = uri.tokenLabel
        self.objectLabel = uri.objectLabel
        self.kind = kind
        self.bits = bits
    }

    deinit {
        // No C_Logout: the login belongs to the application, not this session.
        _ = module.functions.pointee.C_CloseSession(session)
    }

    var f: CK_FUNCTION_LIST { module.functions.pointee }

    /// The private key `uri` names (`CKO_PRIVATE_KEY`, `CKA_LABEL` the URI's object label); nil
    /// when the token has none of that label.
    /// - Throws: ``PKCS11Error/Kind/ambiguousObject`` when more than one private key carries the
    ///   label; ``PKCS11Error/Kind/failed`` for a key that is neither RSA, EC P-256 nor Ed25519.
    package static func open(_ uri: PKCS11URI, pin: [UInt8]) throws(PKCS11Error) -> PKCS11PrivateKey? {
        // Read-only: signing and decrypting make no objects.
        let (module, session) = try PKCS11Module.login(uri, pin: pin, readWrite: false)
        do throws(PKCS11Error) {
            guard
                let handle = try find(
                    module, session, class: CKO_PRIVATE_KEY, noun: "private key", label: uri.objectLabel)
            else {
                _ = module.functions.pointee.C_CloseSession(session)
                return nil
            }
            let (kind, bits, modulus) = try describe(module, session, handle, label: uri.objectLabel)
            return PKCS11PrivateKey(
                module: module, session: session, handle: handle, uri: uri, kind: kind, bits: bits, modulus: modulus)
        } catch {
            _ = module.functions.pointee.C_CloseSession(session)
            throw error
        }
    }

    // MARK: PrivateKeyOperations

    package func sign(_ message: [UInt8], _ algorithm: SignatureAlgorithm) throws(CryptoError) -> [UInt8] {
        if let refusal = refusal(for: algorithm) { throw CryptoError(refusal) }
        let capacity = max(512, (bits + 7) / 8)
        switch algorithm {
        case .rsaPKCS1SHA256:
            return try perform(sign: true, message, mechanism: CKM_SHA256_RSA_PKCS, .absent, capacity: capacity)
        case .rsaPSSSHA256:
            let parameters = CK_RSA_PKCS_PSS_PARAMS(
                hashAlg: CK_MECHANISM_TYPE(CKM_SHA256), mgf: CK_RSA_PKCS_MGF_TYPE(CKG_MGF1_SHA256), sLen: 32)
            return try perform(
                sign: true, message, mechanism: CKM_SHA256_RSA_PKCS_PSS, .pss(parameters), capacity: capacity)
        case .rsaPSSSHA512:
            let parameters = CK_RSA_PKCS_PSS_PARAMS(
                hashAlg: CK_MECHANISM_TYPE(CKM_SHA512), mgf: CK_RSA_PKCS_MGF_TYPE(CKG_MGF1_SHA512), sLen: 64)
            return try perform(
                sign: true, message, mechanism: CKM_SHA512_RSA_PKCS_PSS, .pss(parameters), capacity: capacity)
        case .ecdsaP256SHA256:
            // CKM_ECDSA signs a hash the caller made, and gives r ‖ s (32 bytes each for P-256).
            let signature = try perform(
                sign: true, Digest.sha256(message), mechanism: CKM_ECDSA, .absent, capacity: capacity)
            guard signature.count == 64 else {
                throw CryptoError("PKCS#11 signing failed (C_Sign gave \(signature.count) bytes, not r ‖ s of 64)")
            }
            return signature
        case .ed25519:
            return try perform(sign: true, message, mechanism: CKM_EDDSA, .absent, capacity: capacity)
        }
    }

    package func decryptOAEPSHA256(_ ciphertext: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard kind == .rsa else { throw CryptoError("RSA-OAEP needs an RSA key; the key is \(kind.rawValue)") }
        let parameters = CK_RSA_PKCS_OAEP_PARAMS(
            hashAlg: CK_MECHANISM_TYPE(CKM_SHA256), mgf: CK_RSA_PKCS_MGF_TYPE(CKG_MGF1_SHA256),
            source: CK_RSA_PKCS_OAEP_SOURCE_TYPE(CKZ_DATA_SPECIFIED), pSourceData: nil, ulSourceDataLen: 0)
        let size = (bits + 7) / 8
        let (function, rv, plaintext) = call(
            sign: false, ciphertext, mechanism: CKM_RSA_PKCS_OAEP, .oaep(parameters),
            capacity: max(1, ciphertext.count, size))
        if rv == CKR_OK { return plaintext }
        // A token that refuses OAEP with SHA-256 at C_DecryptInit (SoftHSM 2.6 takes SHA-1
        // only): the RSA operation on the token, raw, and OAEP's padding checked here by
        // OpenSSL's constant-time check. The key still never leaves the token.
        guard function == "C_DecryptInit",
            rv == CKR_ARGUMENTS_BAD || rv == CKR_MECHANISM_PARAM_INVALID || rv == CKR_MECHANISM_INVALID
        else { throw Self.failure(sign: false, function, rv) }
        guard ciphertext.count == size else { throw CryptoError("RSA-OAEP ciphertext of the wrong size") }
        var encoded = try perform(sign: false, ciphertext, mechanism: CKM_RSA_X_509, .absent, capacity: size)
        defer { wipe(&encoded) }
        return try RSAOAEP.unpadSHA256(encoded, modulus: modulus)
    }

    // MARK: Token calls

    /// A mechanism's parameter, kept in memory that stays put for the calls that read it.
    enum Parameter {
        case absent
        case pss(CK_RSA_PKCS_PSS_PARAMS)
        case oaep(CK_RSA_PKCS_OAEP_PARAMS)
    }

    static func withMechanism<R>(
        _ type: some BinaryInteger, _ parameter: Parameter, _ body: (inout CK_MECHANISM) -> R
    ) -> R {
        switch parameter {
        case .absent:
            var mechanism = CK_MECHANISM(mechanism: CK_MECHANISM_TYPE(type), pParameter: nil, ulParameterLen: 0)
            return body(&mechanism)
        case .pss(var parameters):
            return withUnsafeMutablePointer(to: &parameters) { p in
                var mechanism = CK_MECHANISM(
                    mechanism: CK_MECHANISM_TYPE(type), pParameter: UnsafeMutableRawPointer(p),
                    ulParameterLen: CK_ULONG(MemoryLayout<CK_RSA_PKCS_PSS_PARAMS>.size))
                return body(&mechanism)
            }
        case .oaep(var parameters):
            return withUnsafeMutablePointer(to: &parameters) { p in
                var mechanism = CK_MECHANISM(
                    mechanism: CK_MECHANISM_TYPE(type), pParameter: UnsafeMutableRawPointer(p),
                    ulParameterLen: CK_ULONG(MemoryLayout<CK_RSA_PKCS_OAEP_PARAMS>.size))
                return body(&mechanism)
            }
        }
    }

    /// `C_SignInit` + `C_Sign`, or `C_DecryptInit` + `C_Decrypt`, in one go under the lock (a
    /// session runs one operation at a time). `capacity` bytes are room enough for the output.
    func perform(
        sign: Bool, _ data: [UInt8], mechanism type: some BinaryInteger, _ parameter: Parameter, capacity: Int
    ) throws(CryptoError) -> [UInt8] {
        let (function, rv, output) = call(sign: sign, data, mechanism: type, parameter, capacity: capacity)
        guard rv == CKR_OK else { throw Self.failure(sign: sign, function, rv) }
        return output
    }

    static func failure(sign: Bool, _ function: String, _ rv: CK_RV) -> CryptoError {
        let name = PKCS11Error.returnValueNames[rv] ?? "CKR 0x" + String(rv, radix: 16)
        return CryptoError("PKCS#11 \(sign ? "signing" : "decryption") failed (\(function): \(name))")
    }

    /// The calls of ``perform(sign:_:mechanism:_:capacity:)``: which one answered last, its
    /// return value, and the output (empty unless `CKR_OK`).
    func call(
        sign: Bool, _ data: [UInt8], mechanism type: some BinaryInteger, _ parameter: Parameter, capacity: Int
    ) -> (String, CK_RV, [UInt8]) {
        lock.lock()
        defer { lock.unlock() }
        // A token may refuse a null pointer even for no bytes: an empty message gets one byte of
        // room and a length of 0.
        var input = data.isEmpty ? [0] : data
        let inputLength = CK_ULONG(data.count)
        var output = [UInt8](repeating: 0, count: capacity)
        let f = self.f
        let (function, rv): (String, CK_RV) = Self.withMechanism(type, parameter) { mechanism in
            let start =
                sign ? f.C_SignInit(session, &mechanism, handle) : f.C_DecryptInit(session, &mechanism, handle)
            guard start == CKR_OK else { return (sign ? "C_SignInit" : "C_DecryptInit", start) }
            var length = CK_ULONG(output.count)
            var result =
                sign
                ? f.C_Sign(session, &input, inputLength, &output, &length)
                : f.C_Decrypt(session, &input, inputLength, &output, &length)
            if result == CKR_OK {
                if Int(length) <= output.count {
                    output.removeLast(output.count - Int(length))
                } else {
                    result = CK_RV(CKR_GENERAL_ERROR)  // a length past the buffer: the token is broken
                }
            }
            return (sign ? "C_Sign" : "C_Decrypt", result)
        }
        wipe(&input)
        guard rv == CKR_OK else {
            wipe(&output)
            return (function, rv, [])
        }
        return (function, rv, output)
    }

}
