import Foundation
import Testing

@testable import CloakCrypto

struct FF1Vector: Decodable, Sendable, CustomTestStringConvertible {
    let sample: Int
    let key: String
    let tweak: String
    let radix: Int
    let plaintext: String
    let ciphertext: String
    var testDescription: String { "NIST sample \(sample)" }
}

/// The NIST SP 800-38G samples, loaded from the copy of shared/vectors/ff1.json in Fixtures.
let nistVectors: [FF1Vector] = {
    struct File: Decodable { let vectors: [FF1Vector] }
    let url = Bundle.module.url(forResource: "ff1", withExtension: "json", subdirectory: "Fixtures")!
    return try! JSONDecoder().decode(File.self, from: Data(contentsOf: url)).vectors
}()

func hex(_ s: String) -> [UInt8] {
    var out: [UInt8] = []
    var i = s.startIndex
    while i < s.endIndex {
        let j = s.index(i, offsetBy: 2)
        out.append(UInt8(s[i..<j], radix: 16)!)
        i = j
    }
    return out
}

@Suite struct FF1Tests {
    @Test func allNineNISTSamplesAreLoaded() {
        #expect(nistVectors.count == 9)
    }

    @Test(arguments: nistVectors)
    func encryptsTheNISTSample(vector: FF1Vector) throws {
        let ff1 = try FF1(key: SymmetricKey(hex(vector.key)), radix: vector.radix)
        let plain = try #require(FF1.Alphabet.numerals(vector.plaintext, radix: vector.radix))
        let cipher = try ff1.encrypt(plain, tweak: hex(vector.tweak))
        #expect(FF1.Alphabet.text(cipher) == vector.ciphertext)
    }

    @Test(arguments: nistVectors)
    func decryptsTheNISTSample(vector: FF1Vector) throws {
        let ff1 = try FF1(key: SymmetricKey(hex(vector.key)), radix: vector.radix)
        let cipher = try #require(FF1.Alphabet.numerals(vector.ciphertext, radix: vector.radix))
        #expect(FF1.Alphabet.text(try ff1.decrypt(cipher, tweak: hex(vector.tweak))) == vector.plaintext)
    }

    @Test(arguments: [2, 3, 10, 16, 26, 36, 62])
    func randomInputsRoundTripAcrossLengthsAndKeySizes(radix: Int) throws {
        var generator = SystemRandomNumberGenerator()
        for keySize in [16, 24, 32] {
            let ff1 = try FF1(key: SymmetricKey.random(count: keySize), radix: radix)
            for length in [2, 3, 7, 16, 19, 33, 64, 101] {
                let plain = (0..<length).map { _ in UInt8.random(in: 0..<UInt8(radix), using: &generator) }
                let tweak = SecureRandom.bytes(Int.random(in: 0...20))
                let cipher = try ff1.encrypt(plain, tweak: tweak)
                #expect(cipher.count == length)
                #expect(cipher.allSatisfy { Int($0) < radix })
                #expect(try ff1.decrypt(cipher, tweak: tweak) == plain, "radix \(radix) length \(length)")
            }
        }
    }

    @Test(arguments: [2, 10, 16, 36, 62])
    func theWordPathAndTheGeneralPathAgree(radix: Int) throws {
        // The word path (halves below 2^32) must give exactly the general path's numerals.
        var generator = SystemRandomNumberGenerator()
        for keySize in [16, 32] {
            let ff1 = try FF1(key: SymmetricKey.random(count: keySize), radix: radix)
            for length in 2...19 {
                for _ in 0..<8 {
                    let plain = (0..<length).map { _ in UInt8.random(in: 0..<UInt8(radix), using: &generator) }
                    let tweak = SecureRandom.bytes(Int.random(in: 0...40))
                    let word = try ff1.run(plain, tweak: tweak, decrypting: false)
                    #expect(
                        word == (try ff1.run(plain, tweak: tweak, decrypting: false, words: false)),
                        "radix \(radix) length \(length)")
                    #expect(try ff1.run(word, tweak: tweak, decrypting: true) == plain)
                    #expect(try ff1.run(word, tweak: tweak, decrypting: true, words: false) == plain)
                }
            }
        }
    }

    @Test func isAPermutationOfASmallDomain() throws {
        // Every 3-digit decimal string maps to a distinct 3-digit string.
        let ff1 = try FF1(key: SymmetricKey.random(), radix: 10)
        var seen = Set<[UInt8]>()
        for v in 0..<1000 {
            let plain: [UInt8] = [UInt8(v / 100), UInt8(v / 10 % 10), UInt8(v % 10)]
            seen.insert(try ff1.encrypt(plain, tweak: [1, 2, 3]))
        }
        #expect(seen.count == 1000)
    }

    @Test func theTweakChangesTheResult() throws {
        let ff1 = try FF1(key: SymmetricKey.random(), radix: 10)
        let plain: [UInt8] = Array(repeating: 5, count: 12)
        #expect(try ff1.encrypt(plain, tweak: [1]) != ff1.encrypt(plain, tweak: [2]))
    }

    @Test func refusesBadInput() throws {
        #expect(throws: CryptoError.self) { try FF1(key: SymmetricKey.random(), radix: 1) }
        #expect(throws: CryptoError.self) { try FF1(key: SymmetricKey.random(), radix: 63) }
        #expect(throws: CryptoError.self) { try FF1(key: SymmetricKey.random(count: 20), radix: 10) }
        let ff1 = try FF1(key: SymmetricKey.random(), radix: 10)
        #expect(throws: FF1.InputError.self) { try ff1.encrypt([1], tweak: []) }
        #expect(throws: FF1.InputError.self) { try ff1.encrypt([1, 10], tweak: []) }
    }

    @Test func byteLengthMatchesTheStandard() {
        #expect(FF1.byteLength(numerals: 5, radix: 10) == 3)  // ⌈⌈5·3.32⌉/8⌉ = ⌈17/8⌉
        #expect(FF1.byteLength(numerals: 10, radix: 36) == 7)  // ⌈52/8⌉
        #expect(FF1.byteLength(numerals: 8, radix: 16) == 4)  // exactly 32 bits
        #expect(FF1.byteLength(numerals: 9, radix: 2) == 2)
    }
}
