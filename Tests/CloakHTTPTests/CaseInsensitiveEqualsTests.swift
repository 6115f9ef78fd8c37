import CloakCore
import Testing

@testable import CloakHTTP

/// Header names compare byte by byte, ASCII letters in any case, nothing else folded.
@Suite struct CaseInsensitiveEqualsTests {
    @Test(arguments: [
        ("Content-Length", "content-length", true), ("TE", "te", true), ("", "", true),
        ("X-Request-Id", "X-REQUEST-ID", true),
        // a long name: not a small string
        ("X-Custom-Header-With-A-Long-Name-Indeed", "x-custom-header-with-a-long-name-indeed", true),
        ("Content-Length", "Content-Lengt", false), ("Connection", "Connectiom", false),
        // 0x5B and 0x7B differ by 0x20 but are not letters; so do "@" and "`"
        ("[", "{", false), ("@", "`", false), ("x-a]", "x-a}", false),
        // non-ASCII bytes compare exactly: no folding, no canonical equivalence
        ("é", "É", false), ("e\u{301}", "é", false), ("ü", "ü", true),
    ])
    func namesCompare(_ a: String, _ b: String, _ equal: Bool) {
        #expect(a.caseInsensitiveEquals(b) == equal)
        #expect(b.caseInsensitiveEquals(a) == equal)
    }

    @Test func aSubstringsCopyAndALongStringCompare() {
        let line = "transfer-encoding: chunked"
        let name = String(line.split(separator: ":")[0])
        #expect(name.caseInsensitiveEquals("Transfer-Encoding"))
        let long = String(repeating: "A", count: 100)
        #expect(long.caseInsensitiveEquals(String(repeating: "a", count: 100)))
        #expect(!long.caseInsensitiveEquals(String(repeating: "a", count: 99) + "b"))
    }
}
