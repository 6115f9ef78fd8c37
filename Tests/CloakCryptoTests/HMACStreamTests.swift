import Testing

@testable import CloakCrypto

/// A MAC made piece by piece is the one-shot MAC of the whole.
@Suite struct HMACStreamTests {
    @Test(arguments: [0, 1, 63, 64, 65, 1000, 70_000])
    func piecesGiveTheWholesMAC(count: Int) {
        let key = HMACKey(SymmetricKey.random())
        let message = (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        for piece in [1, 5, 64, 4096] {
            let stream = HMACStream(key)
            var offset = 0
            while offset < message.count {
                stream.update(message[offset..<min(offset + piece, message.count)])
                offset += piece
            }
            #expect(stream.finalize() == key.authenticate(message), "\(count) in pieces of \(piece)")
        }
        // And the RFC 4231 construction, by Digest's own HMAC.
        let raw = SymmetricKey.random()
        let stream = HMACStream(HMACKey(raw))
        stream.update(message)
        #expect(stream.finalize() == Digest.hmacSHA256(key: raw.rawBytes, message))
    }
}
