import CloakCore

/// How far an OpenPGP import may inflate (review V, item 9): a compressed message whose
/// plaintext passes 100 times the ciphertext read so far (or 1 MiB, for a small file) is refused
/// as it is decrypted, before the rest is stored: a few KiB uploaded could otherwise fill the
/// store up to `jobs.max_input_mib` with one repeated row. GnuPG reads the ciphertext ahead of
/// what it writes, so an honest file (CSV compresses about 5 to 10 times) never comes near it.
package struct InflationBound: Sendable {
    static let ratio = 100
    static let floor = 1 << 20

    private(set) var ciphertext = 0
    private(set) var plaintext = 0

    /// `count` more bytes of the message were read.
    mutating func read(_ count: Int) { ciphertext += count }

    /// `count` more bytes of plaintext came out: refused past the bound.
    mutating func wrote(_ count: Int) throws(CloakError) {
        plaintext += count
        guard plaintext <= max(Self.ratio * ciphertext, Self.floor) else {
            throw CloakError(
                .payloadTooLarge,
                "the file inflates past \(Self.ratio) times its size as it is decrypted (a compression bomb?); "
                    + "nothing of it was imported")
        }
    }
}
