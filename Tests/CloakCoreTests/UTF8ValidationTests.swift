import Testing

@testable import CloakCore

/// UTF8Validation answers what `String(validating:as:)` answers (which needs a newer OS).
@Suite struct UTF8ValidationTests {
    @Test(
        arguments: [
            [], [0x41], [0xC3, 0xA9], [0xE2, 0x82, 0xAC], [0xF0, 0x9F, 0x98, 0x80], [0xC3], [0xC0, 0x80],
            [0xED, 0xA0, 0x80],
            [0xF4, 0x90, 0x80, 0x80], [0xFF], [0x80], [0xE2, 0x82], [0x41, 0x00, 0x42],
        ] as [[UInt8]])
    func agreesWithTheStandardLibrary(bytes: [UInt8]) {
        #expect(UTF8Validation.isValid(bytes) == (String(validating: bytes, as: UTF8.self) != nil))
        #expect(UTF8Validation.string(bytes) == String(validating: bytes, as: UTF8.self))
    }
}
