import CloakHTTP
import CloakService
import CloakTesting
import Foundation
import Testing

/// The settings issues 21 and 22 added, read from YAML and `CLOAK_*`: each malformed, out of
/// range or contradictory value is an issue with its path, never a silent default.
@Suite struct NewSettingsConfigurationTests {
    static func issues(_ from: String, _ to: String, environment: [String: String] = [:]) -> [String] {
        let yaml = TestServer.configurationWithTokens.replacingOccurrences(of: from, with: to)
        #expect(yaml != TestServer.configurationWithTokens || from == to, "no \(from) in the configuration")
        do {
            _ = try ServiceConfiguration.parse(yaml: yaml, environment: environment)
            return []
        } catch {
            return error.issues.map(\.description)
        }
    }

    @Test(arguments: [
        ("  trusted_proxies: [] ", #"  trusted_proxies: ["10.0.0.0/33"] "#, "server.trusted_proxies[0]"),
        ("  trusted_proxies: [] ", #"  trusted_proxies: ["not-an-address"] "#, "server.trusted_proxies[0]"),
        ("  forwarded_header: x-forwarded-for ", "  forwarded_header: x-real-ip ", "server.forwarded_header"),
        ("  proxy_protocol: false ", "  proxy_protocol: true ", "server.proxy_protocol"),  // with no trusted proxy
        ("  loop_stall_s: 5 ", "  loop_stall_s: 0 ", "server.loop_stall_s"),
        ("    max_bucket_share: 0.25 ", "    max_bucket_share: 0 ", "auth.anonymous.max_bucket_share"),
        ("    max_bucket_share: 0.25 ", "    max_bucket_share: 1.5 ", "auth.anonymous.max_bucket_share"),
        ("    intent_ttl_s: 86400 ", "    intent_ttl_s: -1 ", "auth.anonymous.intent_ttl_s"),
        ("  bucket_values_per_hour: 30 ", "  bucket_values_per_hour: 0 ", "limits.bucket_values_per_hour"),
    ])
    func malformedValuesAreIssuesWithTheirPath(from: String, to: String, path: String) {
        let found = Self.issues(from, to)
        #expect(found.contains { $0.hasPrefix(path) }, "\(found)")
    }

    @Test func goodValuesAndTheEnvironmentOverrideParse() throws {
        #expect(
            Self.issues("  trusted_proxies: [] ", #"  trusted_proxies: ["10.0.0.0/8", "fd00::/8", "192.0.2.7"] "#)
                .isEmpty)
        let yaml = TestServer.configurationWithTokens.replacingOccurrences(
            of: "  proxy_protocol: false ", with: "  proxy_protocol: true ")
        let c = try ServiceConfiguration.parse(
            yaml: yaml, environment: ["CLOAK_SERVER_TRUSTED_PROXIES": " 10.0.0.0/8 , 127.0.0.1 "])
        #expect(
            c.server.proxyProtocol
                && c.server.trustedProxies.networks.map(\.description) == ["10.0.0.0/8", "127.0.0.1/32"])
        // A bad range in the override is named too.
        let bad = Self.issues("x", "x", environment: ["CLOAK_SERVER_TRUSTED_PROXIES": "10.0.0.0/8, nope"])
        #expect(bad.contains { $0.hasPrefix("server.trusted_proxies[1]") }, "\(bad)")
    }
}
