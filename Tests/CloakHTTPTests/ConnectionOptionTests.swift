import Testing

@testable import CloakHTTP

/// `HTTPSyntax.asksToClose`: when a client behind a PROXY-protocol balancer gets its connection
/// ended after the answer.
@Suite struct ConnectionOptionTests {
    @Test(
        arguments: [
            ([], false, false), ([], true, true),
            ([("Connection", "close")], false, true), ([("connection", " Close ")], false, true),
            ([("Connection", "keep-alive, Upgrade")], true, false), ([("Connection", "\tKeep-Alive")], true, false),
            ([("Connection", "Upgrade"), ("Connection", "close")], false, true),
            ([("Connection", "closed")], false, false), ([("Connection", "keep-alive, close")], true, true),
            ([("Connection", ",,, ,")], true, true),
            ([("Connection", String(repeating: "x,", count: 10_000))], false, false),
            ([("X-Connection", "close")], false, false),
        ] as [([(String, String)], Bool, Bool)])
    func options(headers: [(String, String)], http10: Bool, closes: Bool) {
        #expect(HTTPSyntax.asksToClose(headers.map { (name: $0.0, value: $0.1) }, isHTTP10: http10) == closes)
    }
}
