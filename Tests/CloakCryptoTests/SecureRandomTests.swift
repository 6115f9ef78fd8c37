import Foundation
import Synchronization
import Testing

@testable import CloakCrypto

/// Random bytes come from a per-thread buffer of DRBG output: every size, every thread, never
/// the same bytes twice.
@Suite struct SecureRandomTests {
    @Test(arguments: [0, 1, 12, 16, 511, 512, 513, 4096, 10_000])
    func givesTheSizeAsked(count: Int) {
        #expect(SecureRandom.bytes(count).count == count)
    }

    @Test func drawsAcrossThreadsAndRefillsNeverRepeat() {
        let seen = Mutex<Set<[UInt8]>>([])
        let repeats = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            // 2,000 draws of 16 bytes: several refills of each thread's 4 KiB buffer.
            for _ in 0..<2_000 {
                let draw = SecureRandom.bytes(16)
                if !seen.withLock({ $0.insert(draw).inserted }) { repeats.add(1, ordering: .relaxed) }
            }
        }
        #expect(repeats.load(ordering: .relaxed) == 0)
        #expect(seen.withLock { $0.count } == 16_000)
    }

    @Test func bytesAreSpreadOverEveryValue() {
        var counts = [Int](repeating: 0, count: 256)
        for _ in 0..<(256 * 400 / 16) {  // through the thread's buffer, 16 bytes at a time
            for b in SecureRandom.bytes(16) { counts[Int(b)] += 1 }
        }
        // 400 expected per value; a buffer handed out twice or left zeroed would skew this far more.
        #expect(counts.allSatisfy { (250...550).contains($0) })
    }

    @Test func uniformStaysInRange() {
        for bound in [1, 2, 7, 10, 1_000_003] {
            for _ in 0..<200 { #expect((0..<bound).contains(SecureRandom.uniform(bound))) }
        }
    }
}
