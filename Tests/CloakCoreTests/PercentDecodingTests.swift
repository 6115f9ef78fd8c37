import CloakCore
import Testing

/// The one `%XX` decoder, for path segments (no `+` rule) and form bodies (`+` is a space).
@Suite struct PercentDecodingTests {
    @Test func escapesAndPlusSigns() {
        #expect(PercentDecoding.decode(Array("a%2Fb+c".utf8), plusAsSpace: false) == "a/b+c")
        #expect(PercentDecoding.decode(Array("a%2fb+c".utf8), plusAsSpace: true) == "a/b c")
        #expect(PercentDecoding.decode(Array("%E2%82%AC".utf8), plusAsSpace: false) == "€")
        #expect(PercentDecoding.decode([], plusAsSpace: true) == "")
    }

    @Test(arguments: ["%", "%4", "a%", "%zz", "%4g", "%%41", "%FF", "%C3", "%ED%A0%80"])
    func malformedEscapesAndBytesThatAreNotUTF8AreRefused(raw: String) {
        #expect(PercentDecoding.decode(Array(raw.utf8), plusAsSpace: false) == nil)
        #expect(PercentDecoding.decode(Array(raw.utf8), plusAsSpace: true) == nil)
    }
}
