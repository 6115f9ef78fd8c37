import CloakCrypto
import Testing

@testable import CloakVault

@Suite struct Base58Tests {
    @Test(arguments: [
        ([UInt8]("Hello World!".utf8), 17, "2NEpo7TZRRrLZSi2U"),
        ([UInt8](repeating: 0xFF, count: 16), 22, "YcVfxkQb6JRzqk5kF2tNLv"),
        ([UInt8](repeating: 0xFF, count: 13), 18, "NKioeUVktgzXLJ1B3t"),
        ([0, 0, 1], 3, "112"),
        ([UInt8](repeating: 0, count: 16), 22, String(repeating: "1", count: 22)),
    ])
    func encodesBitcoinBase58PaddedToTheWidth(_ bytes: [UInt8], _ width: Int, _ expected: String) {
        #expect(Base58.encode(bytes, width: width) == expected)
    }

    @Test func randomTokensAlwaysFillTheirWidthWithoutAmbiguousCharacters() {
        for _ in 0..<500 {
            let text = Base58.encode(SecureRandom.bytes(16), width: 22)
            #expect(text.count == 22)
            #expect(Set(text).isSubset(of: base58Characters))
            #expect(!text.contains { "0OIl".contains($0) })
        }
    }
}
