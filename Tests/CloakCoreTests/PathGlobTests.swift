import CloakCore
import Testing

/// Egress route path patterns.
struct PathGlobTests {
    @Test(arguments: [
        ("/v1/*", "/v1/charges", true), ("/v1/*", "/v1/payment_intents/pi_1/confirm", true), ("/v1/*", "/v1/", true),
        ("/v1/*", "/v1", false), ("/v1/*", "/v2/charges", false), ("/v1/*", "/x/v1/charges", false),
        ("/*", "/", true), ("/*", "/anything/at/all", true), ("/v1/charges", "/v1/charges", true),
        ("/v1/charges", "/v1/charges/ch_1", false), ("/v1/*/confirm", "/v1/pi_1/confirm", true),
        ("/v1/*/confirm", "/v1/pi_1/cancel", false), ("/v1/*/confirm", "/v1/confirm", false),
        ("/a*b*c", "/abc", true), ("/a*b*c", "/aXbYc", true), ("/a*b*c", "/ab", false), ("/a*bc", "/abc", true),
        // Compared as sent: an encoded slash is not a slash.
        ("/v1/charges", "/v1%2Fcharges", false),
    ])
    func matches(pattern: String, path: String, expected: Bool) throws {
        #expect(try PathGlob(pattern).matches(path) == expected)
    }

    @Test(arguments: ["", "v1/*", "/v1 /x", "/v1?x=1", "/v1#x", "/v1/\u{7F}"])
    func malformedPatternsAreRefused(pattern: String) {
        #expect(throws: SelectorError.self) { try PathGlob(pattern) }
    }
}
