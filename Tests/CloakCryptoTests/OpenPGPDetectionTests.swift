import CloakCrypto
import Testing

/// Which bodies `cloak import` and `POST /admin/jobs/imports` take for OpenPGP messages (issue
/// 60): a message's first packet is a session key's; a plain file whose first letter's UTF-8
/// (or cp1252) byte happens to carry such a tag is still a plain file.
struct OpenPGPDetectionTests {
    @Test(
        arguments: [
            // gpg's public-key session key packets: old format (0x85, two-octet length), new format.
            ([0x85, 0x01, 0x0C, 0x03] + [UInt8](repeating: 0xAB, count: 60), true),
            ([0xC1, 0xC0, 0x4C, 0x03] + [UInt8](repeating: 0xAB, count: 60), true),
            ([0x84, 0x5E, 0x03] + [UInt8](repeating: 0xAB, count: 61), true),
            ([0xC1, 0x5E, 0x06] + [UInt8](repeating: 0xAB, count: 61), true),
            // A passphrase's session key (gpg -c): old format 0x8C, version 4.
            ([0x8C, 0x0D, 0x04, 0x09, 0x03, 0x08] + [UInt8](repeating: 0xAB, count: 58), true),
            // Armor.
            (Array("-----BEGIN PGP MESSAGE-----\n\nhQEMA".utf8), true),
            // Plain files: a CSV header, UTF-8 letters whose first byte is 0xC3 or 0xC1-like, cp1252.
            (Array("id,card_number,exp_date\n".utf8), false),
            (Array("Über,card_number\nr1,4242424242424242\n".utf8), false),
            (Array("Émetteur,card_number\n".utf8), false),
            (Array("ÿ,card\n".utf8), false),
            ([0x84, 0x20, 0x69, 0x64], false),  // cp1252 „ then text
            ([0x8C, 0x64, 0x69, 0x64], false),  // cp1252 Œ then text
            ([0xC3], false),
            ([0xC1, 0xFF, 0x00], false),  // a four-octet length cut short
            ([0x87, 0x03], false),  // indeterminate length
            ([], false),
        ] as [([UInt8], Bool)])
    func firstBytesTellAMessage(bytes: [UInt8], encrypted: Bool) {
        #expect(OpenPGPDecryption.looksEncrypted(bytes) == encrypted)
    }
}
