@testable import CloakCrypto
import Testing

@Suite struct AESGCMTests {
    @Test func roundTripsWithTheSameAssociatedData() throws {
        let key = SymmetricKey.random()
        let box = try AESGCM.seal(Array("4111111111111111".utf8), key: key, associatedData: Array("tok_1|k1".utf8))
        #expect(box.nonce.count == 12 && box.tag.count == 16)
        #expect(box.ciphertext != Array("4111111111111111".utf8))
        #expect(try AESGCM.open(box, key: key, associatedData: Array("tok_1|k1".utf8)) == Array("4111111111111111".utf8))
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
        let box = AESGCM.SealedBox(nonce: [UInt8](repeating: 0, count: 12), ciphertext: [],
                                   tag: hex("530f8afbc74536b9a963b4f1c4cb738b"))
        #expect(try AESGCM.open(box, key: SymmetricKey([UInt8](repeating: 0, count: 32)), associatedData: []) == [])
    }
}

@Suite struct DigestTests {
    @Test func sha256KnownAnswer() {
        #expect(Digest.sha256(Array("abc".utf8)) == hex("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"))
    }

    @Test func hmacKnownAnswerRFC4231Case2() {
        let mac = Digest.hmacSHA256(key: Array("Jefe".utf8), Array("what do ya want for nothing?".utf8))
        #expect(mac == hex("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"))
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
