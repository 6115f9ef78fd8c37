import Testing

@testable import CloakHTTP

/// Header names and values as the server and the upstream client check them, without sockets.
@Suite struct HTTPSyntaxTests {
    /// RFC 9110 `tchar`, spelled out: the bit table must say the same for all 256 bytes.
    @Test func theTokenTableIsTheDefinition() {
        let letters = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789".utf8)
        let tchar = Set(letters + Array(HTTPSyntax.tokenPunctuation.utf8))
        #expect(tchar.count == 62 + 15)
        for b in 0...255 {
            #expect(HTTPSyntax.isTokenByte(UInt8(b)) == tchar.contains(UInt8(b)), "byte \(b)")
        }
    }

    @Test(arguments: [
        ("Content-Type", true), ("X-Request-Id", true), ("a", true), ("!#$%&'*+-.^_`|~", true),
        ("", false), ("Name ", false), (" Name", false), ("Na:me", false), ("Näme", false), ("Na\tme", false),
        ("Na\u{0}me", false), ("Na\r\nme", false), ("(x)", false), ("x/y", false),
        ("a-name-longer-than-fifteen-bytes", true), ("a-name-longer-than-fifteen-bytes\n", false),
    ])
    func tokens(name: String, isToken: Bool) {
        #expect(HTTPSyntax.isToken(name) == isToken)
        // A string whose bytes are not contiguous (a substring made into a string) says the same.
        let sliced = String(("#" + name).dropFirst())
        #expect(HTTPSyntax.isToken(sliced) == isToken)
    }

    @Test(arguments: [
        ("application/json", true), ("", true), ("tab\tinside", true), ("ünïcode", true),
        ("a\r\nX-Injected: 1", false), ("bare\rCR", false), ("bare\nLF", false), ("nul\u{0}", false),
        ("del\u{7F}", false), ("esc\u{1B}", false),
    ])
    func fieldValues(value: String, isFieldValue: Bool) {
        #expect(HTTPSyntax.isFieldValue(value) == isFieldValue)
    }

    /// The length-first check is the set's definition, in any case; other names pass.
    @Test func hopByHopNamesAreDroppedInAnyCase() {
        for name in hopByHopHeaders.sorted() + ["expect"] {
            for spelling in [name, name.uppercased(), name.prefix(1).uppercased() + name.dropFirst()] {
                #expect(isHopByHopOrExpect(spelling), "\(spelling)")
                #expect(withoutHopByHop([(spelling, "x"), ("Accept", "*/*")]).map(\.name) == ["Accept"])
            }
        }
        for name in [
            "tea", "expects", "trailers", "connections", "keep_alive", "x-connection", "host", "authorization",
        ] {
            #expect(!isHopByHopOrExpect(name), "\(name)")
        }
        let listed = (0..<3000).map { "x-\($0)" }
        let many = withoutHopByHop(
            [("Connection", listed.joined(separator: ","))] + (0..<4000).map { ("X-\($0)", "1") })
        #expect(many.map(\.name) == (3000..<4000).map { "X-\($0)" })
        let named = withoutHopByHop([("Connection", "close, X-Secret"), ("x-secret", "1"), ("Accept", "*/*")])
        #expect(named.map(\.name) == ["Accept"])
    }
}
