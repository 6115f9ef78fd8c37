import ArgumentParser
import CloakService
import CloakVault
import Foundation

struct Store: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Move the vault between stores.", subcommands: [Migrate.self])

    struct Migrate: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Copy every record, still sealed, from one store to another, and check the counts.",
            discussion: """
                Records are copied as they are (ciphertexts, fingerprints, aliases and their signatures, the
                key-check value): nothing is decrypted, and the same keys open the copy. Re-running is safe:
                records already copied are skipped. Stop the nodes writing to the source first.

                A password on the command line is visible to every user of the machine (ps): give a
                PostgreSQL URL through an environment variable with --from-env / --to-env, or leave the
                password out of the URL and let libpq take it from PGPASSWORD or the password file
                (PGPASSFILE, ~/.pgpass).
                  export CLOAK_MIGRATE_TO='postgres://cloak:…@db:5432/cloak?sslmode=verify-full'
                  cloak store migrate --from sqlite:data/cloak.db --to-env CLOAK_MIGRATE_TO
                  PGPASSWORD=… cloak store migrate --from sqlite:data/cloak.db --to postgres://cloak@db:5432/cloak
                """)

        @Option(help: "The source store: sqlite:PATH or postgres://… (a URL with a password: use --from-env).")
        var from: String?
        @Option(help: ArgumentHelp("The environment variable holding the source store's URL.", valueName: "name"))
        var fromEnv: String?
        @Option(help: "The destination store: sqlite:PATH or postgres://… (a URL with a password: use --to-env).")
        var to: String?
        @Option(help: ArgumentHelp("The environment variable holding the destination store's URL.", valueName: "name"))
        var toEnv: String?

        func validate() throws {
            guard (from == nil) != (fromEnv == nil) else {
                throw ValidationError("give exactly one of --from and --from-env")
            }
            guard (to == nil) != (toEnv == nil) else { throw ValidationError("give exactly one of --to and --to-env") }
        }

        /// The URL given directly, or the value of the variable named (never echoed: it may hold a password).
        static func url(_ direct: String?, variable: String?, option: String) throws -> String {
            if let direct { return direct }
            let name = variable ?? ""
            guard let value = ProcessInfo.processInfo.environment[name], !value.isEmpty else {
                throw ValidationError("\(option) names the environment variable \(name), which is not set or empty")
            }
            return value
        }

        func run() throws {
            let sourceURL = try Self.url(from, variable: fromEnv, option: "--from-env")
            let destinationURL = try Self.url(to, variable: toEnv, option: "--to-env")
            do {
                let source = try VaultBootstrap.store(url: sourceURL)
                let destination = try VaultBootstrap.store(url: destinationURL)
                let report = try StoreMigration(from: source, to: destination).run { report in
                    FileHandle.standardError.write(
                        Data("copied \(report.copied), already there \(report.skipped)\n".utf8))
                }
                print(
                    "migrated \(Self.shown(sourceURL)) -> \(Self.shown(destinationURL)): \(report.copied) copied, "
                        + "\(report.skipped) already there; \(report.sourceRecords) records in the source, "
                        + "\(report.destinationRecords) in the destination")
            } catch {
                FileHandle.standardError.write(Data("cloak: store migrate: \(error)\n".utf8))
                throw ExitCode(1)
            }
        }

        /// A store URL as it may be printed: a PostgreSQL URL rebuilt from its parts with the
        /// password starred; anything else through ``StoreURL/redacted(_:)``.
        static func shown(_ url: String) -> String {
            (try? PostgresURL(parsing: url))?.description ?? StoreURL.redacted(url)
        }
    }
}
