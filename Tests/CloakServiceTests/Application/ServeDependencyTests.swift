import CloakTesting
import Foundation
import Testing

/// Review V, item 10: a fresh clone's `scripts/serve` installed Chromium, the PostgreSQL server
/// and haproxy before serving (287 s to `/healthz`). It installs only what building and serving
/// need; `scripts/test` installs the rest.
struct ServeDependencyTests {
    static func script(_ name: String) throws -> String {
        try String(contentsOf: TestServer.repositoryRoot.appendingPathComponent("scripts/\(name)"), encoding: .utf8)
    }

    /// The `serve` branch of `scripts/install-deps`: the packages it asks `apt-get` for.
    static func servePackages() throws -> Set<String> {
        let text = try script("install-deps")
        let branch = try #require(text.range(of: #"if [ "${1:-}" = "serve" ]; then"#))
        let end = try #require(text.range(of: "\n  exit 0\nfi", range: branch.upperBound..<text.endIndex))
        let body = text[branch.upperBound..<end.lowerBound]
        let install = try #require(body.range(of: "--no-install-recommends"))
        return Set(
            body[install.upperBound...].replacingOccurrences(of: "\\", with: " ").split(whereSeparator: \.isWhitespace)
                .map(String.init).filter { !$0.hasPrefix(">") && !$0.hasPrefix("-") })
    }

    @Test func serveInstallsOnlyWhatBuildingAndServingNeed() throws {
        #expect(try Self.script("serve").contains("scripts/install-deps serve\n"))
        // A debug build unless asked: a fresh clone's release build alone took over 600 s.
        #expect(try Self.script("serve").contains(#"swift run -c "${CLOAK_BUILD:-debug}" cloak serve"#))
        let packages = try Self.servePackages()
        #expect(
            packages == [
                "libevent-dev", "libssl-dev", "libsqlite3-dev", "libpq-dev", "libp11-kit-dev", "libgpgme-dev",
                "pkg-config", "gnupg", "ca-certificates",
            ], "\(packages)")
        // The test command still installs everything the tests use.
        let all = try Self.script("install-deps")
        for tool in ["chromium", "postgresql", "haproxy", "softhsm2", "wrk"] { #expect(all.contains(tool)) }
        #expect(try Self.script("test").contains("scripts/install-deps\n"))
    }
}
