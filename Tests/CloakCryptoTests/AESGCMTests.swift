import Testing

@testable import CloakCrypto

@Suite struct AESGCMTests {
    @Test func roundTripsWithTheSameAssociatedData() throws {
        let key = SymmetricKey.random()
        let box = try AESGCM.seal(Array("4111111111111111".utf8), key: key, associatedData: Array("tok_1|k1".utf8))
        #expect(box.nonce.count == 12 && box.tag.count == 16)
        #expect(box.ciphertext != Array("4111111111111111".utf8))
        #expect(
            try AESGCM.open(box, key: key, associatedData: Array("tok_1|k1".utf8)) == Array("4111111111111111".utf8))
    }

    @Test func emptyPlaintextRoundTrips() throws {
        let key = SymmetricKey.random()
        let box = try AESGCM.seal([], key: key, associatedData: [])
        #expect(try AESGCM.open(box, key: key, associatedData: []) == [])
    }

    @Test func noncesAreFreshEachTime() throws {
        let key = SymmetricKey.random()
        let a = try AESGCM.seal([1, 2, 3], key: key, associatedData: [])
        let b = try AESGCM.seal([1, 2, 3], key: key, associatedData: [])
        #expect(a.nonce != b.nonce)
        #expect(a.ciphertext != b.ciphertext)
    }

    @Test(arguments: ["ciphertext", "tag", "nonce", "aad", "key"])
    func tamperingIsDetected(part: String) throws {
        let key = SymmetricKey.random()
        var box = try AESGCM.seal(Array("123-45-6789".utf8), key: key, associatedData: [7])
        var aad: [UInt8] = [7]
        var openKey = key
        switch part {
        case "ciphertext": box.ciphertext[0] ^= 1
        case "tag": box.tag[15] ^= 0x80
        case "nonce": box.nonce[0] ^= 1
        case "aad": aad = [8]
        default: openKey = SymmetricKey.random()
        }
        #expect(throws: CryptoError.authenticationFailed) { try AESGCM.open(box, key: openKey, associatedData: aad) }
    }

    @Test func matchesAKnownAnswer() throws {
        // NIST GCM test vector (gcmEncryptExtIV256, Count 0 with empty PT): key 0…0, IV 0…0.
        // Checked by opening: a box built from the published tag must authenticate.
        let box = AESGCM.SealedBox(
            nonce: [UInt8](repeating: 0, count: 12), ciphertext: [],
            tag: hex("530f8afbc74536b9a963b4f1c4cb738b"))
        #expect(try AESGCM.open(box, key: SymmetricKey([UInt8](repeating: 0, count: 32)), associatedData: []) == [])
    }
}

@Suite struct DigestTests {
    @Test func sha256KnownAnswer() {
        #expect(
            Digest.sha256(Array("abc".utf8)) == hex("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"))
    }

    @Test func hmacKnownAnswerRFC4231Case2() {
        let mac = Digest.hmacSHA256(key: Array("Jefe".utf8), Array("what do ya want for nothing?".utf8))
        #expect(mac == hex("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"))
    }

    /// The rest of RFC 4231's cases: short and 25-byte keys, a key longer than the block (hashed
    /// first), data longer than the block, and an empty message with a key of exactly one block.
    @Test(
        arguments: [
            (
                [UInt8](repeating: 0x0B, count: 20), Array("Hi There".utf8),
                "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
            ),
            (
                [UInt8](repeating: 0xAA, count: 20), [UInt8](repeating: 0xDD, count: 50),
                "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"
            ),
            (
                Array(1...25), [UInt8](repeating: 0xCD, count: 50),
                "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"
            ),
            (
                [UInt8](repeating: 0xAA, count: 131),
                Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8),
                "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
            ),
            (
                [UInt8](repeating: 0xAA, count: 131),
                Array(
                    ("This is a test using a larger than block-size key and a larger than "
                        + "block-size data. The key needs to be hashed before being used by the HMAC algorithm.").utf8),
                "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"
            ),
            (
                [UInt8](repeating: 0x01, count: 64), [],
                "11581ebc1f05ecefdee13d63845c1a43b219a7bc8e0e90d3396baeb2a55677d7"
            ),
        ] as [([UInt8], [UInt8], String)])
    func hmacKnownAnswers(key: [UInt8], data: [UInt8], expected: String) {
        #expect(Digest.hmacSHA256(key: key, data) == hex(expected))
    }

    @Test func keysNeverPrintTheirBytes() {
        let key = SymmetricKey([0x41, 0x42, 0x43, 0x44])
        #expect(!"\(key)".contains("ABCD") && !String(reflecting: key).contains("65"))
    }

    @Test func constantTimeEqualsComparesContent() {
        #expect(constantTimeEquals([1, 2, 3], [1, 2, 3]))
        #expect(!constantTimeEquals([1, 2, 3], [1, 2, 4]))
        #expect(!constantTimeEquals([1, 2], [1, 2, 3]))
    }
}
