import COpenSSL
import CPKCS11
import Foundation

/// An AES-256 key on a PKCS#11 token, used through a logged-in session: the token seals and
/// opens (AES-256-GCM); the key's bytes never leave it (Cloak makes it sensitive and not
/// extractable). One session per key, used by one thread at a time (a lock).
package final class PKCS11Key: @unchecked Sendable {
    package let tokenLabel: String
    package let objectLabel: String
    private let module: PKCS11Module
    private let session: CK_SESSION_HANDLE
    private let handle: CK_OBJECT_HANDLE
    private let lock = NSLock()

    private init(
        module: PKCS11Module, session: CK_SESSION_HANDLE, handle: CK_OBJECT_HANDLE, uri: PKCS11URI
    ) {
        self.module = module
        self.session = session
        self.handle = handle
        self.tokenLabel = uri.tokenLabel
        self.objectLabel = uri.objectLabel
    }

    deinit {
        // No C_Logout: the login belongs to the application, not this session.
        _ = module.functions.pointee.C_CloseSession(session)
    }

    private var f: CK_FUNCTION_LIST { module.functions.pointee }

    /// The key `uri` names; nil when the token has no secret key of that label.
    package static func open(_ uri: PKCS11URI, pin: [UInt8]) throws(PKCS11Error) -> PKCS11Key? {
        let (module, session) = try PKCS11Module.login(uri, pin: pin, readWrite: true)
        do throws(PKCS11Error) {
            guard let handle = try find(module, session, label: uri.objectLabel) else {
                _ = module.functions.pointee.C_CloseSession(session)
                return nil
            }
            try checkAES256(module, session, handle, label: uri.objectLabel)
            return PKCS11Key(module: module, session: session, handle: handle, uri: uri)
        } catch {
            _ = module.functions.pointee.C_CloseSession(session)
            throw error
        }
    }

    /// Makes the key `uri` names on the token: AES-256, a token object, private, sensitive, not
    /// extractable, for encryption and decryption only (Cloak seals the ring's keys with
    /// `C_Encrypt`; a key that may also `C_WrapKey` could export other keys of the token).
    package static func create(_ uri: PKCS11URI, pin: [UInt8]) throws(PKCS11Error) -> PKCS11Key {
        let (module, session) = try PKCS11Module.login(uri, pin: pin, readWrite: true)
        var template = Template()
        template.add(CKA_CLASS, ulong: CKO_SECRET_KEY)
        template.add(CKA_KEY_TYPE, ulong: CKK_AES)
        template.add(CKA_VALUE_LEN, ulong: 32)
        for (attribute, value) in [
            (CKA_TOKEN, true), (CKA_PRIVATE, true), (CKA_SENSITIVE, true), (CKA_EXTRACTABLE, false),
            (CKA_ENCRYPT, true), (CKA_DECRYPT, true), (CKA_WRAP, false), (CKA_UNWRAP, false),
        ] {
            template.add(CK_ATTRIBUTE_TYPE(attribute), bool: value)
        }
        template.add(CKA_LABEL, bytes: Array(uri.objectLabel.utf8))
        template.add(CKA_ID, bytes: Array(Digest.sha256(Array(uri.objectLabel.utf8)).prefix(16)))
        var mechanism = CK_MECHANISM(mechanism: CK_MECHANISM_TYPE(CKM_AES_KEY_GEN), pParameter: nil, ulParameterLen: 0)
        var handle: CK_OBJECT_HANDLE = 0
        let rv = template.withAttributes { attributes, count in
            module.functions.pointee.C_GenerateKey(session, &mechanism, attributes, count, &handle)
        }
        guard rv == CKR_OK else {
            _ = module.functions.pointee.C_CloseSession(session)
            throw .call("C_GenerateKey", rv)
        }
        return PKCS11Key(module: module, session: session, handle: handle, uri: uri)
    }

    /// AES-256-GCM on the token with a fresh 96-bit nonce: `nonce ‖ ciphertext ‖ tag`.
    package func seal(_ plaintext: [UInt8], associatedData: [UInt8]) throws(PKCS11Error) -> [UInt8] {
        let nonce = SecureRandom.bytes(12)
        let body = try crypt(encrypt: true, plaintext, nonce: nonce, associatedData: associatedData)
        return nonce + body
    }

    /// Opens what ``seal(_:associatedData:)`` made.
    /// - Throws: ``PKCS11Error/Kind/failed`` for another key, other associated data or altered bytes.
    package func open(_ sealed: [UInt8], associatedData: [UInt8]) throws(PKCS11Error) -> [UInt8] {
        guard sealed.count >= 28 else { throw PKCS11Error(.failed, "the wrapped data is truncated") }
        do {
            return try crypt(
                encrypt: false, Array(sealed.dropFirst(12)), nonce: Array(sealed.prefix(12)),
                associatedData: associatedData)
        } catch {
            throw PKCS11Error(.failed, "the token could not open the wrapped data: wrong key or altered data")
        }
    }

    /// Whether the token would let the key's bytes out (`CKA_EXTRACTABLE` set, or `CKA_VALUE`
    /// readable): false for every key Cloak makes.
    package var isExtractable: Bool {
        lock.lock()
        defer { lock.unlock() }
        var extractable = CK_BBOOL(0)
        var value = [UInt8](repeating: 0, count: 32)
        // Each attribute points at memory that outlives the calls that write it.
        let readable = withUnsafeMutablePointer(to: &extractable) { flag in
            value.withUnsafeMutableBytes { buffer -> Bool in
                var flagAttribute = CK_ATTRIBUTE(
                    type: CK_ATTRIBUTE_TYPE(CKA_EXTRACTABLE), pValue: flag, ulValueLen: 1)
                var valueAttribute = CK_ATTRIBUTE(
                    type: CK_ATTRIBUTE_TYPE(CKA_VALUE), pValue: buffer.baseAddress, ulValueLen: 32)
                let rv = f.C_GetAttributeValue(session, handle, &flagAttribute, 1)
                let valueRV = f.C_GetAttributeValue(session, handle, &valueAttribute, 1)
                return rv == CKR_OK && (flag.pointee != 0 || valueRV == CKR_OK)
            }
        }
        OPENSSL_cleanse(&value, 32)
        return readable
    }

    private func crypt(encrypt: Bool, _ input: [UInt8], nonce: [UInt8], associatedData: [UInt8])
        throws(PKCS11Error) -> [UInt8]
    {
        lock.lock()
        defer { lock.unlock() }
        var nonce = nonce
        var aad = associatedData
        var input = input
        var output = [UInt8](repeating: 0, count: input.count + 16)
        let rv: CK_RV = nonce.withUnsafeMutableBufferPointer { iv in
            aad.withUnsafeMutableBufferPointer { aad in
                var parameters = CK_GCM_PARAMS(
                    pIv: iv.baseAddress, ulIvLen: CK_ULONG(iv.count), ulIvBits: CK_ULONG(iv.count * 8),
                    pAAD: aad.baseAddress, ulAADLen: CK_ULONG(aad.count), ulTagBits: 128)
                return withUnsafeMutablePointer(to: &parameters) { p in
                    var mechanism = CK_MECHANISM(
                        mechanism: CK_MECHANISM_TYPE(CKM_AES_GCM), pParameter: UnsafeMutableRawPointer(p),
                        ulParameterLen: CK_ULONG(MemoryLayout<CK_GCM_PARAMS>.size))
                    let start =
                        encrypt
                        ? f.C_EncryptInit(session, &mechanism, handle) : f.C_DecryptInit(session, &mechanism, handle)
                    guard start == CKR_OK else { return start }
                    var length = CK_ULONG(output.count)
                    let rv =
                        encrypt
                        ? f.C_Encrypt(session, &input, CK_ULONG(input.count), &output, &length)
                        : f.C_Decrypt(session, &input, CK_ULONG(input.count), &output, &length)
                    if rv == CKR_OK { output.removeLast(output.count - Int(length)) }
                    return rv
                }
            }
        }
        guard rv == CKR_OK else {
            OPENSSL_cleanse(&output, output.count)
            throw .call(encrypt ? "C_Encrypt" : "C_Decrypt", rv)
        }
        return output
    }

    // MARK: Session

    private static func find(_ module: PKCS11Module, _ session: CK_SESSION_HANDLE, label: String)
        throws(PKCS11Error) -> CK_OBJECT_HANDLE?
    {
        var template = Template()
        template.add(CKA_CLASS, ulong: CKO_SECRET_KEY)
        template.add(CKA_LABEL, bytes: Array(label.utf8))
        let f = module.functions.pointee
        let rv = template.withAttributes { attributes, count in f.C_FindObjectsInit(session, attributes, count) }
        guard rv == CKR_OK else { throw .call("C_FindObjectsInit", rv) }
        defer { _ = f.C_FindObjectsFinal(session) }
        // Two are asked for: with two keys of one label, which one wraps would be the token's
        // choice, and a ring wrapped by one would not open with the other.
        var handles: [CK_OBJECT_HANDLE] = [0, 0]
        var found: CK_ULONG = 0
        let rv2 = f.C_FindObjects(session, &handles, 2, &found)
        guard rv2 == CKR_OK else { throw .call("C_FindObjects", rv2) }
        guard found < 2 else {
            throw PKCS11Error(
                .ambiguousObject,
                "the token holds more than one secret key labelled \"\(label)\": give each its own label")
        }
        return found == 1 ? handles[0] : nil
    }

    private static func checkAES256(
        _ module: PKCS11Module, _ session: CK_SESSION_HANDLE, _ handle: CK_OBJECT_HANDLE, label: String
    ) throws(PKCS11Error) {
        var type = CK_KEY_TYPE(0)
        var length = CK_ULONG(0)
        let rv = withUnsafeMutablePointer(to: &type) { type in
            withUnsafeMutablePointer(to: &length) { length in
                var attributes = [
                    CK_ATTRIBUTE(
                        type: CK_ATTRIBUTE_TYPE(CKA_KEY_TYPE), pValue: type,
                        ulValueLen: CK_ULONG(MemoryLayout<CK_KEY_TYPE>.size)),
                    CK_ATTRIBUTE(
                        type: CK_ATTRIBUTE_TYPE(CKA_VALUE_LEN), pValue: length,
                        ulValueLen: CK_ULONG(MemoryLayout<CK_ULONG>.size)),
                ]
                return module.functions.pointee.C_GetAttributeValue(session, handle, &attributes, 2)
            }
        }
        guard rv == CKR_OK, type == CKK_AES, length == 32 else {
            throw PKCS11Error(.notAnAESKey, "the token's object \"\(label)\" is not an AES-256 key")
        }
    }
}

/// A PKCS#11 attribute template whose values live as long as it does.
private struct Template {
    private var entries: [(CK_ATTRIBUTE_TYPE, [UInt8])] = []

    mutating func add(_ type: some BinaryInteger, ulong value: some BinaryInteger) {
        entries.append((CK_ATTRIBUTE_TYPE(type), withUnsafeBytes(of: CK_ULONG(value)) { Array($0) }))
    }

    mutating func add(_ type: some BinaryInteger, bool value: Bool) {
        entries.append((CK_ATTRIBUTE_TYPE(type), [value ? 1 : 0]))
    }

    mutating func add(_ type: some BinaryInteger, bytes: [UInt8]) { entries.append((CK_ATTRIBUTE_TYPE(type), bytes)) }

    func withAttributes<R>(_ body: (UnsafeMutablePointer<CK_ATTRIBUTE>, CK_ULONG) -> R) -> R {
        var attributes: [CK_ATTRIBUTE] = []
        // Each value in memory that stays put for the call (an array's storage may not), wiped after.
        let buffers = entries.map { $0.1 }.map { bytes -> UnsafeMutableRawPointer in
            let p = UnsafeMutableRawPointer.allocate(byteCount: max(1, bytes.count), alignment: 8)
            bytes.withUnsafeBytes { p.copyMemory(from: $0.baseAddress!, byteCount: bytes.count) }
            return p
        }
        defer {
            for (p, entry) in zip(buffers, entries) {
                memset(p, 0, max(1, entry.1.count))
                p.deallocate()
            }
        }
        for (i, entry) in entries.enumerated() {
            attributes.append(CK_ATTRIBUTE(type: entry.0, pValue: buffers[i], ulValueLen: CK_ULONG(entry.1.count)))
        }
        return attributes.withUnsafeMutableBufferPointer { body($0.baseAddress!, CK_ULONG($0.count)) }
    }
}
