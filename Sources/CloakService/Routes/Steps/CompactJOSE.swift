import CloakCore
import CloakCrypto

/// JOSE's compact serializations as route steps make and read them (issue 49): JWS (RFC 7515)
/// with RS256, PS256 or ES256, and JWE (RFC 7516) with `RSA-OAEP-256` key encryption and
/// `A256GCM` content encryption, the pair Visa's and Mastercard's APIs take. Nothing else is
/// read: an answer's JWE naming another algorithm, a compression or a critical header is
/// refused, never guessed at.
enum CompactJOSE {
    /// `header.payload.signature`, the header `{"alg":…,"kid":…}`.
    static func sign(
        _ payload: [UInt8], algorithm: Route.Step.JWSSigning.Algorithm, keyID: String?,
        key: any PrivateKeyOperations
    ) throws(CryptoError) -> String {
        var header = JSONWriter(reservingCapacity: 64)
        header.beginObject()
        header.key("alg")
        header.stringValue(algorithm.rawValue)
        if let keyID {
            header.key("kid")
            header.stringValue(keyID)
        }
        header.endObject()
        let input = Base64.encodeURL(header.bytes) + "." + Base64.encodeURL(payload)
        let signature = try key.sign(Array(input.utf8), algorithm.signature)
        return input + "." + Base64.encodeURL(signature)
    }

    /// `header.encryptedKey.iv.ciphertext.tag`: a fresh content key and IV for each message,
    /// the protected header as the additional data (RFC 7516 5.1).
    static func encrypt(
        _ plaintext: [UInt8], to key: AsymmetricKey, keyID: String?, contentType: String?
    ) throws(CryptoError) -> String {
        var header = JSONWriter(reservingCapacity: 96)
        header.beginObject()
        header.key("alg")
        header.stringValue("RSA-OAEP-256")
        header.key("enc")
        header.stringValue("A256GCM")
        if let keyID {
            header.key("kid")
            header.stringValue(keyID)
        }
        if let contentType {
            header.key("cty")
            header.stringValue(contentType)
        }
        header.endObject()
        let protected = Base64.encodeURL(header.bytes)
        let contentKey = SymmetricKey.random(count: 32)
        let encryptedKey = try key.encryptOAEPSHA256(contentKey.rawBytes)
        let box = try AESGCM.seal(plaintext, key: contentKey, associatedData: Array(protected.utf8))
        return [
            protected, Base64.encodeURL(encryptedKey), Base64.encodeURL(box.nonce),
            Base64.encodeURL(box.ciphertext), Base64.encodeURL(box.tag),
        ].joined(separator: ".")
    }

    /// What went wrong opening an answer's JWE (the text never names a key or a value).
    struct DecryptionFailure: Error, CustomStringConvertible {
        let description: String
    }

    /// Whether `body` is shaped as a compact JWE: five base64url parts, optional whitespace
    /// around them. Anything else is not one (an answer in plain JSON passes as it is).
    static func looksLikeJWE(_ body: [UInt8]) -> Bool {
        let trimmed = trim(body)
        guard !trimmed.isEmpty, trimmed.count < Int(Int32.max) else { return false }
        var dots = 0
        for b in trimmed {
            if b == UInt8(ascii: ".") {
                dots += 1
            } else if !(isBase64URL(b)) {
                return false
            }
        }
        return dots == 4
    }

    /// The plaintext of a compact JWE to `key`, and its `cty` (nil when absent).
    static func decrypt(_ body: [UInt8], with key: any PrivateKeyOperations) throws(DecryptionFailure)
        -> (plaintext: [UInt8], contentType: String?)
    {
        let parts = trim(body).split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 5 else { throw DecryptionFailure(description: "the answer is not a compact JWE") }
        let text = parts.map { String(decoding: $0, as: UTF8.self) }
        guard let headerBytes = Base64.decode(text[0], url: true),
            case .object(let members)? = try? JSONParser(maxDepth: 4).parse(headerBytes)
        else { throw DecryptionFailure(description: "the answer's JWE header is not base64url JSON") }
        // JSONParser refuses a member named twice: no last-one-wins `alg`.
        let header = Dictionary(members.map { ($0.key, $0.value) }, uniquingKeysWith: { first, _ in first })
        guard header["alg"] == .string("RSA-OAEP-256"), header["enc"] == .string("A256GCM") else {
            throw DecryptionFailure(
                description: "the answer's JWE is not RSA-OAEP-256 with A256GCM, the only pair Cloak decrypts")
        }
        guard header["zip"] == nil, header["crit"] == nil else {
            throw DecryptionFailure(description: "the answer's JWE asks for zip or crit, which Cloak does not take")
        }
        var contentType: String?
        if let cty = header["cty"] {
            // A media type (RFC 9110 8.3.1), or its subtype alone: it becomes Content-Type.
            guard case .string(let value) = cty, isMediaType(value.contains("/") ? value : "application/" + value)
            else {
                throw DecryptionFailure(description: "the answer's JWE cty is not a media type")
            }
            contentType = value.contains("/") ? value : "application/" + value
        }
        guard let encryptedKey = Base64.decode(text[1], url: true), let iv = Base64.decode(text[2], url: true),
            let ciphertext = Base64.decode(text[3], url: true), let tag = Base64.decode(text[4], url: true),
            iv.count == 12, tag.count == 16
        else { throw DecryptionFailure(description: "the answer's JWE parts are not base64url of the right sizes") }
        guard key.kind == .rsa, encryptedKey.count == (key.bits + 7) / 8 else {
            throw DecryptionFailure(description: "the answer's JWE does not decrypt with the route's key")
        }
        // RFC 7516 11.5: a key that does not decrypt goes on as a random one, so the answer and
        // the time taken do not tell a wrong key from an altered message.
        var contentKey = (try? key.decryptOAEPSHA256(encryptedKey)) ?? []
        if contentKey.count != 32 { contentKey = SecureRandom.bytes(32) }
        defer { wipe(&contentKey) }
        do {
            let plaintext = try AESGCM.open(
                AESGCM.SealedBox(nonce: iv, ciphertext: ciphertext, tag: tag), key: SymmetricKey(contentKey),
                associatedData: Array(text[0].utf8))
            return (plaintext, contentType)
        } catch {
            // One answer for a wrong key and an altered message (no oracle on which it was).
            throw DecryptionFailure(description: "the answer's JWE does not decrypt with the route's key")
        }
    }

    /// `type/subtype` and parameters, of visible ASCII without a line break (it goes in a header).
    private static func isMediaType(_ text: String) -> Bool {
        let parts = text.split(separator: ";", maxSplits: 1)
        guard let kind = parts.first, kind.split(separator: "/", omittingEmptySubsequences: false).count == 2 else {
            return false
        }
        return text.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F } && kind.utf8.allSatisfy { $0 != 0x20 }
    }

    private static func isBase64URL(_ b: UInt8) -> Bool {
        (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || (b >= 0x30 && b <= 0x39) || b == 0x2D || b == 0x5F
    }

    private static func trim(_ body: [UInt8]) -> ArraySlice<UInt8> {
        var slice = body[...]
        while let first = slice.first, first == 0x20 || first == 0x0A || first == 0x0D || first == 0x09 {
            slice = slice.dropFirst()
        }
        while let last = slice.last, last == 0x20 || last == 0x0A || last == 0x0D || last == 0x09 {
            slice = slice.dropLast()
        }
        return slice
    }
}
