import Testing

@testable import CloakService

/// The forwarded-path check's one-pass rule for paths without escapes decides as the decoding
/// rule does: a table of the refusals that matter, then every path of up to six characters
/// from the bytes that decide (dots, slashes, `;`, a letter, `\`, `#`, space, tab, DEL).
struct ForwardedPathTests {
    @Test(arguments: [
        ("/v1/charges", true), ("/", true), ("", true), ("//a//", true), ("/.well-known/x", true),
        ("/a/.../b", true), ("/a/..a/b", true), ("/a;x/b", true), ("/a/.;x/../b", false),
        ("/a/..", false), ("/a/.", false), ("/../a", false), ("/a/..;x/b", false), ("/a/.;/b", false),
        ("/a\\b", false), ("/a#b", false), ("/a b", false), ("/a\u{7F}", false), ("/é", false),
        ("..", false), (".", false), ("/a/;../b", true),
    ])
    func plainPaths(path: String, safe: Bool) {
        #expect(ForwardedPath.isSafePlain(path) == safe, "\(path)")
        #expect(ForwardedPath.isSafe(path, decoded: path) == safe, "\(path)")
    }

    @Test func theOnePassRuleDecidesAsTheDecodingRule() {
        let alphabet: [Character] = [".", "/", ";", "a", "\\", "#", " ", "\t", "\u{7F}"]
        var paths: [String] = [""]
        var frontier: [String] = [""]
        for _ in 1...6 {
            frontier = frontier.flatMap { prefix in alphabet.map { prefix + String($0) } }
            paths += frontier
        }
        let disagreeing = paths.filter { ForwardedPath.isSafePlain($0) != ForwardedPath.isSafe($0, decoded: $0) }
        #expect(disagreeing.isEmpty, "\(disagreeing.prefix(10).map { Array($0.utf8) })")
        #expect(paths.count > 500_000)
    }
}
