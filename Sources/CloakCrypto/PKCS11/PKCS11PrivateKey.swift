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
    private let modulus: [UInt8]
    private let module: PKCS11Module
    private let session: CK_SESSION_HANDLE
    private let handle: CK_OBJECT_HANDLE
    private let lock = NSLock()

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

    private var f: CK_FUNCTION_LIST { module.functions.pointee }

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
    private enum Parameter {
        case absent
        case pss(CK_RSA_PKCS_PSS_PARAMS)
        case oaep(CK_RSA_PKCS_OAEP_PARAMS)
    }

    private static func withMechanism<R>(
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
    private func perform(
        sign: Bool, _ data: [UInt8], mechanism type: some BinaryInteger, _ parameter: Parameter, capacity: Int
    ) throws(CryptoError) -> [UInt8] {
        let (function, rv, output) = call(sign: sign, data, mechanism: type, parameter, capacity: capacity)
        guard rv == CKR_OK else { throw Self.failure(sign: sign, function, rv) }
        return output
    }

    private static func failure(sign: Bool, _ function: String, _ rv: CK_RV) -> CryptoError {
        let name = PKCS11Error.returnValueNames[rv] ?? "CKR 0x" + String(rv, radix: 16)
        return CryptoError("PKCS#11 \(sign ? "signing" : "decryption") failed (\(function): \(name))")
    }

    /// The calls of ``perform(sign:_:mechanism:_:capacity:)``: which one answered last, its
    /// return value, and the output (empty unless `CKR_OK`).
    private func call(
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

    // MARK: Session

    /// The one object of `objectClass` labelled `label`; nil when there is none.
    private static func find(
        _ module: PKCS11Module, _ session: CK_SESSION_HANDLE, class objectClass: some BinaryInteger,
        noun: String, label: String
    ) throws(PKCS11Error) -> CK_OBJECT_HANDLE? {
        let f = module.functions.pointee
        var classValue = CK_OBJECT_CLASS(objectClass)
        var labelBytes = Array(label.utf8)
        let rv: CK_RV = withUnsafeMutablePointer(to: &classValue) { classPointer in
            labelBytes.withUnsafeMutableBytes { labelBuffer in
                var template = [
                    CK_ATTRIBUTE(
                        type: CK_ATTRIBUTE_TYPE(CKA_CLASS), pValue: UnsafeMutableRawPointer(classPointer),
                        ulValueLen: CK_ULONG(MemoryLayout<CK_OBJECT_CLASS>.size)),
                    CK_ATTRIBUTE(
                        type: CK_ATTRIBUTE_TYPE(CKA_LABEL), pValue: labelBuffer.baseAddress,
                        ulValueLen: CK_ULONG(labelBuffer.count)),
                ]
                return f.C_FindObjectsInit(session, &template, CK_ULONG(template.count))
            }
        }
        guard rv == CKR_OK else { throw .call("C_FindObjectsInit", rv) }
        defer { _ = f.C_FindObjectsFinal(session) }
        // Two are asked for: with two keys of one label, which one signs would be the token's choice.
        var handles: [CK_OBJECT_HANDLE] = [0, 0]
        var found: CK_ULONG = 0
        let rv2 = f.C_FindObjects(session, &handles, 2, &found)
        guard rv2 == CKR_OK else { throw .call("C_FindObjects", rv2) }
        guard found < 2 else {
            throw PKCS11Error(
                .ambiguousObject,
                "the token holds more than one \(noun) labelled \"\(label)\": give each its own label")
        }
        return found == 1 ? handles[0] : nil
    }

    /// DER of the OID prime256v1 (1.2.840.10045.3.1.7), as `CKA_EC_PARAMS` names P-256.
    private static let p256Parameters: [UInt8] = [0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07]
    /// `CKA_EC_PARAMS` for Ed25519: the OID id-Ed25519 (1.3.101.112), or PKCS#11 3.0's
    /// PrintableString "edwards25519".
    private static let ed25519Parameters: [[UInt8]] = [
        [0x06, 0x03, 0x2B, 0x65, 0x70], [0x13, 0x0C] + Array("edwards25519".utf8),
    ]

    /// What the key is, and its size in bits and modulus when RSA. The modulus or curve is read from the
    /// private key, or from the public key of the same label when the token does not show it there.
    private static func describe(
        _ module: PKCS11Module, _ session: CK_SESSION_HANDLE, _ handle: CK_OBJECT_HANDLE, label: String
    ) throws(PKCS11Error) -> (AsymmetricKeyKind, Int, modulus: [UInt8]) {
        let f = module.functions.pointee
        guard let keyType = ulongAttribute(f, session, handle, CKA_KEY_TYPE) else {
            throw PKCS11Error(.failed, "the token does not tell what kind of key its private key \"\(label)\" is")
        }
        func attribute(_ attributeType: CK_ATTRIBUTE_TYPE) throws(PKCS11Error) -> [UInt8]? {
            if let value = bytesAttribute(f, session, handle, attributeType), !value.isEmpty { return value }
            guard
                let publicKey = try find(module, session, class: CKO_PUBLIC_KEY, noun: "public key", label: label)
            else { return nil }
            guard let value = bytesAttribute(f, session, publicKey, attributeType), !value.isEmpty else { return nil }
            return value
        }
        let key = "the token's private key \"\(label)\""
        let supported = "Cloak signs and decrypts with RSA, EC P-256 and Ed25519 keys"
        if keyType == CK_KEY_TYPE(CKK_RSA) {
            guard let modulus = try attribute(CK_ATTRIBUTE_TYPE(CKA_MODULUS)), let bits = bitLength(modulus) else {
                throw PKCS11Error(.failed, "the token shows the modulus of \(key) neither on it nor on its public key")
            }
            return (.rsa, bits, modulus)
        }
        if keyType == CK_KEY_TYPE(CKK_EC) {
            guard try attribute(CK_ATTRIBUTE_TYPE(CKA_EC_PARAMS)) == p256Parameters else {
                throw PKCS11Error(.failed, "\(key) is an EC key on a curve other than P-256: \(supported)")
            }
            return (.ecP256, 0, [])
        }
        if keyType == CK_KEY_TYPE(CKK_EC_EDWARDS) {
            // A token that does not show the curve is taken at its word; Ed448 is refused.
            if let parameters = try attribute(CK_ATTRIBUTE_TYPE(CKA_EC_PARAMS)),
                !ed25519Parameters.contains(parameters)
            {
                throw PKCS11Error(.failed, "\(key) is an Edwards-curve key other than Ed25519: \(supported)")
            }
            return (.ed25519, 0, [])
        }
        let names: [CK_KEY_TYPE: String] = [1: "DSA", 2: "Diffie-Hellman", 0x41: "EC Montgomery (X25519 or X448)"]
        let name = names[keyType] ?? "CKK 0x" + String(keyType, radix: 16)
        throw PKCS11Error(.failed, "\(key) is a \(name) key: \(supported)")
    }

    private static func ulongAttribute(
        _ f: CK_FUNCTION_LIST, _ session: CK_SESSION_HANDLE, _ handle: CK_OBJECT_HANDLE, _ type: some BinaryInteger
    ) -> CK_ULONG? {
        var value = CK_ULONG(0)
        let rv: CK_RV = withUnsafeMutablePointer(to: &value) { p in
            var attribute = CK_ATTRIBUTE(
                type: CK_ATTRIBUTE_TYPE(type), pValue: UnsafeMutableRawPointer(p),
                ulValueLen: CK_ULONG(MemoryLayout<CK_ULONG>.size))
            return f.C_GetAttributeValue(session, handle, &attribute, 1)
        }
        return rv == CKR_OK ? value : nil
    }

    /// A public attribute's bytes (a modulus, EC parameters): nil when the object has none or the
    /// token will not show it. The size is asked for first.
    private static func bytesAttribute(
        _ f: CK_FUNCTION_LIST, _ session: CK_SESSION_HANDLE, _ handle: CK_OBJECT_HANDLE, _ type: some BinaryInteger
    ) -> [UInt8]? {
        var attribute = CK_ATTRIBUTE(type: CK_ATTRIBUTE_TYPE(type), pValue: nil, ulValueLen: 0)
        // CK_UNAVAILABLE_INFORMATION (all ones) for a sensitive or absent value.
        guard f.C_GetAttributeValue(session, handle, &attribute, 1) == CKR_OK,
            attribute.ulValueLen != CK_ULONG.max, attribute.ulValueLen <= 65_536
        else { return nil }
        var value = [UInt8](repeating: 0, count: Int(attribute.ulValueLen))
        let rv: CK_RV = value.withUnsafeMutableBytes { buffer in
            attribute.pValue = buffer.baseAddress
            return f.C_GetAttributeValue(session, handle, &attribute, 1)
        }
        guard rv == CKR_OK, Int(attribute.ulValueLen) <= value.count else { return nil }
        return Array(value.prefix(Int(attribute.ulValueLen)))
    }

    /// The bit length of a big-endian unsigned integer; nil when it is zero.
    private static func bitLength(_ bytes: [UInt8]) -> Int? {
        guard let first = bytes.firstIndex(where: { $0 != 0 }) else { return nil }
        return (bytes.count - first - 1) * 8 + (8 - bytes[first].leadingZeroBitCount)
    }
}
