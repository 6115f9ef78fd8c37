import CloakTesting
import Foundation
import Testing

/// `cloak store migrate` as operators run it: store URLs from environment variables (a password
/// on the command line is visible in `ps`), and URLs that do not parse refused without being
/// quoted. No PostgreSQL server is needed: a bad URL is refused before libpq is called.
@Suite struct StoreMigrateCommandTests {
    @Test func theURLsComeFromEnvironmentVariables() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let result = try ProcessTests.run(
            ["store", "migrate", "--from-env", "CLOAK_TEST_FROM", "--to-env", "CLOAK_TEST_TO"],
            environment: [
                "CLOAK_TEST_FROM": "sqlite:\(directory.path)/a.db", "CLOAK_TEST_TO": "sqlite:\(directory.path)/b.db",
            ])
        #expect(result.status == 0, "\(result.output)")
        #expect(
            result.output.contains("migrated sqlite:\(directory.path)/a.db -> sqlite:\(directory.path)/b.db"),
            "\(result.output)")
        #expect(FileManager.default.fileExists(atPath: "\(directory.path)/b.db"))
    }

    @Test(arguments: [
        (["--from", "sqlite:x.db"], "exactly one of --to and --to-env"),
        (
            ["--from", "sqlite:x.db", "--to", "sqlite:y.db", "--to-env", "CLOAK_TEST_TO"],
            "exactly one of --to and --to-env"
        ),
        (["--to", "sqlite:y.db"], "exactly one of --from and --from-env"),
        (
            ["--from", "sqlite:x.db", "--to-env", "CLOAK_TEST_UNSET_VARIABLE"],
            "CLOAK_TEST_UNSET_VARIABLE, which is not set"
        ),
    ])
    func theSourceAndDestinationAreEachGivenOnce(arguments: [String], message: String) throws {
        let result = try ProcessTests.run(
            ["store", "migrate"] + arguments, environment: ["CLOAK_TEST_TO": "sqlite:y.db"])
        #expect(result.status != 0)
        #expect(result.output.contains(message), "\(result.output)")
    }

    /// libpq used to quote these: the first one's password in its percent-decoding error, the
    /// whole second URL in its bracket error.
    @Test(arguments: [
        ("postgres://cloak:Sup3rS%ZZecret@127.0.0.1:1/cloak", "password has an invalid percent escape"),
        ("postgres://cloak:Sup3rSecret@[::1/cloak", "unclosed IPv6 bracket"),
    ])
    func aBadURLIsRefusedWithoutQuotingIt(url: String, message: String) throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        for arguments in [["--to", url], ["--to-env", "CLOAK_TEST_TO"]] {
            let result = try ProcessTests.run(
                ["store", "migrate", "--from", "sqlite:\(directory.path)/a.db"] + arguments,
                environment: ["CLOAK_TEST_TO": url])
            #expect(result.status == 1, "\(result.output)")
            #expect(result.output.contains(message), "\(result.output)")
            #expect(
                !result.output.contains("Sup3r") && !result.output.contains("ecret"),
                "the URL is quoted: \(result.output)")
        }
    }

    @Test func theHelpNamesTheEnvironmentOptionsAndPGPASSWORD() throws {
        let result = try ProcessTests.run(["store", "migrate", "--help"])
        for text in ["--from-env", "--to-env", "PGPASSWORD", "PGPASSFILE"] {
            #expect(result.output.contains(text), "\(text): \(result.output)")
        }
    }
}
