import COpenSSL
import CPKCS11
import Foundation

/// Finding a key on its token and reading what it is (kind, size) from its attributes.
extension PKCS11PrivateKey {
    // MARK: Session

    /// The one object of `objectClass` labelled `label`; nil when there is none.
    static func find(
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
    static let p256Parameters: [UInt8] = [0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07]
    /// `CKA_EC_PARAMS` for Ed25519: the OID id-Ed25519 (1.3.101.112), or PKCS#11 3.0's
    /// PrintableString "edwards25519".
    static let ed25519Parameters: [[UInt8]] = [
        [0x06, 0x03, 0x2B, 0x65, 0x70], [0x13, 0x0C] + Array("edwards25519".utf8),
    ]

    /// What the key is, and its size in bits and modulus when RSA. The modulus or curve is read from the
    /// private key, or from the public key of the same label when the token does not show it there.
    static func describe(
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

    static func ulongAttribute(
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
    static func bytesAttribute(
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
    static func bitLength(_ bytes: [UInt8]) -> Int? {
        guard let first = bytes.firstIndex(where: { $0 != 0 }) else { return nil }
        return (bytes.count - first - 1) * 8 + (8 - bytes[first].leadingZeroBitCount)
    }
}
