import Foundation
import Synchronization
import Testing

@testable import CloakCrypto

/// A key made ready once gives RFC 4231's MACs, message after message, from any thread.
@Suite struct HMACKeyTests {
    static func hex(_ s: String) -> [UInt8] {
        stride(from: 0, to: s.count, by: 2).map { UInt8(s.dropFirst($0).prefix(2), radix: 16)! }
    }

    // RFC 4231 test cases 2 and 1.
    static let jefe = HMACKey(SymmetricKey(Array("Jefe".utf8)))
    static let jefeMAC = hex("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    static let case1 = (
        key: [UInt8](repeating: 0x0B, count: 20), data: Array("Hi There".utf8),
        mac: hex("b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
    )

    @Test func givesTheRFCMACsAgainAndAgain() {
        for _ in 0..<3 {
            #expect(Self.jefe.authenticate(Array("what do ya want for nothing?".utf8)) == Self.jefeMAC)
        }
        let key = HMACKey(SymmetricKey(Self.case1.key))
        #expect(key.authenticate(Self.case1.data) == Self.case1.mac)
        #expect(key.authenticate([]) == Digest.hmacSHA256(key: Self.case1.key, []))
    }

    @Test func oneKeyServesManyThreadsAtOnce() {
        let wrong = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<2_000 where Self.jefe.authenticate(Array("what do ya want for nothing?".utf8)) != Self.jefeMAC
            {
                wrong.add(1, ordering: .relaxed)
            }
        }
        #expect(wrong.load(ordering: .relaxed) == 0)
    }
}
