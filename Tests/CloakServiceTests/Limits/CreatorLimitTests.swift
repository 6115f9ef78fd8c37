import CloakCrypto
import CloakHTTP
import CloakService
import CloakTesting
import Foundation
import Testing

/// What a token may create and how fast (review defects 2 and 3): a token without
/// `aliases:create` is anonymous on the open endpoints and takes from its address's bucket; a
/// creator is held to distinct values a bucket an hour, every format counted, its rate charged
/// a value at a time.
@Suite(.serialized, .tags(.sockets)) struct CreatorLimitTests {
    static let payToken = "pay-only-token"
    static let deleteToken = "delete-only-token"

    /// The test configuration with a token that may only pay (`egress:psp`) and one that may only
    /// delete, and `replacements` applied to the YAML.
    static func server(_ replacements: [(String, String)] = []) throws -> TestService {
        func entry(_ id: String, _ token: String, _ scopes: String) -> String {
            let hex = Digest.sha256(Array(token.utf8)).map { String(format: "%02x", $0) }.joined()
            return "{id: \(id), sha256: \"\(hex)\", scopes: [\(scopes)]}, "
        }
        var yaml = TestServer.configurationWithTokens.replacingOccurrences(
            of: "  tokens: [",
            with: "  tokens: [" + entry("payer", payToken, "\"egress:psp\"")
                + entry("deleter", deleteToken, "aliases:delete"))
        for (from, to) in replacements {
            #expect(yaml.contains(from), "the configuration has no \(from)")
            yaml = yaml.replacingOccurrences(of: from, with: to)
        }
        return try TestService(yaml: yaml)
    }

    // MARK: Any token on an open endpoint

    @Test(arguments: [payToken, deleteToken])
    func aTokenWithoutAliasesCreateIsAnonymousOnOpenEndpoints(token: String) throws {
        try withTestServer(Self.server()) { server throws in
            let client = try server.client()
            let card = "4111111111111111"
            let first = TestCards.aliases(
                try client.request("POST", "/tokens", json: TestCards.body([card]), headers: TestCards.bearer(token)))
            let second = TestCards.aliases(
                try client.request("POST", "/tokens", json: TestCards.body([card]), headers: TestCards.bearer(token)))
            #expect(first.count == 1 && second.count == 1)
            #expect(first != second, "a token without aliases:create got a repeatable alias")
            // A creator gets the one deterministic alias, which neither random draw is.
            let creator = TestCards.aliases(
                try client.request(
                    "POST", "/aliases", json: TestCards.body([card]),
                    headers: TestCards.bearer(TestServer.createOnlyToken)))
            #expect(creator.count == 1 && !first.contains(creator[0]) && !second.contains(creator[0]))
            // The small alias space an anonymous caller may not fill: a 15-digit Amex.
            let amex = try client.request(
                "POST", "/tokens", json: TestCards.body(["378282246310005"]), headers: TestCards.bearer(token))
            #expect(amex.status == 400 && amex.errorCode == 1002, "\(amex.text)")
        }
    }

    @Test func aTokenWithoutAliasesCreateTakesFromItsAddresssAnonymousBucket() throws {
        try withTestServer(
            Self.server([
                (
                    "anonymous: {requests_per_minute: 10000000, burst: 1000000}",
                    "anonymous: {requests_per_minute: 1, burst: 2}"
                )
            ])
        ) { server in
            let client = try server.client()
            let statuses = try (0..<3).map { _ in
                try client.request(
                    "POST", "/tokens", json: TestCards.body(["4111111111111111"], format: "UUID"),
                    headers: TestCards.bearer(Self.payToken)
                ).status
            }
            #expect(statuses == [201, 201, 429])
            // The same address without a token shares that bucket; a creator has its own.
            #expect(
                try client.request("POST", "/tokens", json: TestCards.body(["4111111111111111"], format: "UUID")).status
                    == 429)
            #expect(
                try client.request(
                    "POST", "/tokens", json: TestCards.body(["4111111111111111"], format: "UUID"),
                    headers: TestCards.bearer(TestServer.createOnlyToken)
                ).status == 201)
        }
    }

    // MARK: A creator guessing a card from its alias

    @Test func aCreatorIsHeldToDistinctValuesPerBucketAndAudited() throws {
        try withTestServer(Self.server([("  bucket_values_per_hour: 30 ", "  bucket_values_per_hour: 5 ")])) {
            server throws in
            let client = try server.client()
            let creator = TestCards.bearer(TestServer.createOnlyToken)
            let cards = TestCards.cards(7)
            // Six distinct values of one bucket in one request: refused whole, nothing written.
            let over = try client.request(
                "POST", "/aliases", json: TestCards.body(Array(cards.prefix(6))), headers: creator)
            #expect(over.status == 429 && over.errorCode == 1429, "\(over.text)")
            #expect(Int(over.header("Retry-After") ?? "") ?? 0 >= 1)
            #expect(!over.text.contains("411111"))
            // Five pass, and the same five again (values already counted count once).
            for _ in 0..<2 {
                #expect(
                    try client.request(
                        "POST", "/aliases", json: TestCards.body(Array(cards.prefix(5))), headers: creator
                    )
                    .status
                        == 201)
            }
            // A sixth distinct value of that bucket is refused; one of another bucket is not.
            #expect(
                try client.request("POST", "/aliases", json: TestCards.body([cards[6]]), headers: creator).status == 429
            )
            #expect(
                try client.request("POST", "/aliases", json: TestCards.body(["5555555555554444"]), headers: creator)
                    .status
                    == 201)
            // Another token has its own count.
            #expect(
                try client.request(
                    "POST", "/aliases", json: TestCards.body([cards[6]]),
                    headers: TestCards.bearer(TestServer.fullToken)
                ).status == 201)
            // The alert: an audit line naming the token and the format, and a metric.
            let audit = server.logs.lines.filter { $0.contains(#""action":"bucket_limit""#) }
            #expect(
                audit.count == 2
                    && audit.allSatisfy { $0.contains(#""token_id":"creator""#) && $0.contains("FPE_SIX_T_FOUR") })
            #expect(!server.logs.text.contains("411111"))
            let metrics = try client.request("GET", "/metrics").text
            #expect(metrics.contains(#"cloak_bucket_value_limit_total{format="FPE_SIX_T_FOUR"} 2"#), "\(metrics)")
        }
    }

    @Test func tokenFormatsAreHeldToTheBucketLimitToo() throws {
        // An SSN under GENERIC_T_FOUR shows its last four: 10^5 candidates share them.
        try withTestServer(Self.server([("  bucket_values_per_hour: 30 ", "  bucket_values_per_hour: 5 ")])) {
            server throws in
            let ssns = (0..<6).map { String(format: "%03d-%02d-6789", 100 + $0, 10 + $0) }
            let r = try server.client().request(
                "POST", "/aliases", json: TestCards.body(ssns, format: "GENERIC_T_FOUR"),
                headers: TestCards.bearer(TestServer.createOnlyToken))
            #expect(r.status == 429 && r.errorCode == 1429, "\(r.text)")
            #expect(
                try server.client().request(
                    "POST", "/aliases", json: TestCards.body(Array(ssns.prefix(5)), format: "GENERIC_T_FOUR"),
                    headers: TestCards.bearer(TestServer.createOnlyToken)
                ).status == 201)
        }
    }

    @Test func aCreatorsRateBucketIsChargedPerValue() throws {
        try withTestServer(
            Self.server([
                (
                    "token: {requests_per_minute: 10000000, burst: 1000000}",
                    "token: {requests_per_minute: 1, burst: 10}"
                )
            ])
        ) { server in
            let client = try server.client()
            let values = (0..<10).map { "value-\($0)" }
            #expect(
                try client.request(
                    "POST", "/aliases", json: TestCards.body(values, format: "UUID"),
                    headers: TestCards.bearer(TestServer.createOnlyToken)
                ).status == 201)
            // Ten values spent the burst of ten: the next request waits, whatever its size.
            let next = try client.request(
                "POST", "/aliases", json: TestCards.body(["one"], format: "UUID"),
                headers: TestCards.bearer(TestServer.createOnlyToken))
            #expect(next.status == 429 && next.errorCode == 1429, "\(next.text)")
        }
    }
}
