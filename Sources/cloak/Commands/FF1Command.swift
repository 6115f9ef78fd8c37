import ArgumentParser
import CloakCrypto
import Foundation

/// `cloak ff1 encrypt|decrypt --key HEX --tweak HEX --radix N VALUE`: NIST SP 800-38G FF1, so
/// operators can check Cloak against any other FF1 implementation.
struct FF1Command: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ff1",
        abstract: "Encrypt or decrypt with FF1 (numerals 0-9, a-z, then A-Z, as in the NIST samples).")

    enum Direction: String, ExpressibleByArgument { case encrypt, decrypt }

    @Argument(help: "encrypt or decrypt") var direction: Direction
    @Option(help: "AES key as hex: 16, 24 or 32 bytes.") var key: String
    @Option(help: "Tweak as hex (may be empty).") var tweak: String = ""
    @Option(help: "Radix, 2 to 62.") var radix: Int = 10
    @Argument(help: "The numeral string.") var value: String

    func run() throws {
        guard let keyBytes = decodeHex(key), [16, 24, 32].contains(keyBytes.count) else {
            throw ValidationError("--key must be 32, 48 or 64 hexadecimal characters")
        }
        guard let tweakBytes = tweak.isEmpty ? [] : decodeHex(tweak) else {
            throw ValidationError("--tweak must be hexadecimal")
        }
        guard (2...62).contains(radix) else { throw ValidationError("--radix must be 2 to 62") }
        guard let numerals = FF1.Alphabet.numerals(value, radix: radix), numerals.count >= 2 else {
            throw ValidationError("VALUE must be at least 2 numerals of radix \(radix)")
        }
        let ff1 = try FF1(key: SymmetricKey(keyBytes), radix: radix)
        let out =
            direction == .encrypt
            ? try ff1.encrypt(numerals, tweak: tweakBytes) : try ff1.decrypt(numerals, tweak: tweakBytes)
        print(FF1.Alphabet.text(out))
    }
}
