import ArgumentParser
import CloakService
import CloakVault
import Foundation

struct Store: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Move the vault between stores.", subcommands: [Migrate.self])

    struct Migrate: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Copy everything a store holds, still sealed, into another; --verify compares them.",
            discussion: """
                Everything the store holds is copied as it is: records (ciphertexts, fingerprints, aliases and
                their signatures), each with its file in the same transaction, the key-check value and key ring,
                run-time API credentials, BIN tables and the key audit trail. Nothing is decrypted, and the same
                keys open the copy. What was copied is printed by kind. Re-running is safe and resumes an
                interrupted run; --verify then compares both stores. Stop the nodes writing to the source first.

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

        @Flag(
            help:
                "Only compare the two stores (every record, file, named value and audit line); exit 1 on a difference.")
        var verify = false

        /// The service's named values, by kind: run-time credentials (their use marks are a
        /// hint each store keeps its own of), and BIN tables (the pointer after the tables).
        static let metadataKinds = [
            StoreMigration.MetadataKind(prefix: APICredentials.storeName, kind: .credentials),
            StoreMigration.MetadataKind(
                prefix: APICredentials.usedName, kind: .credentials, difference: .keepDestination),
            StoreMigration.MetadataKind(prefix: BinTableDocument.tablePrefix, kind: .bins),
            StoreMigration.MetadataKind(prefix: BinTableDocument.pointerName, kind: .bins, last: true),
            StoreMigration.MetadataKind(prefix: BinTableNode.prefix, kind: .other, difference: .skip),
            // A node's guess windows are its own, sealed for its name: not moved.
            StoreMigration.MetadataKind(prefix: GuessWindowsKeeper.prefix, kind: .other, difference: .skip),
        ]

        func run() throws {
            let sourceURL = try Self.url(from, variable: fromEnv, option: "--from-env")
            let destinationURL = try Self.url(to, variable: toEnv, option: "--to-env")
            let route = "\(Self.shown(sourceURL)) -> \(Self.shown(destinationURL))"
            do {
                var migration = StoreMigration(
                    from: try VaultBootstrap.store(url: sourceURL), to: try VaultBootstrap.store(url: destinationURL))
                migration.metadataKinds = Self.metadataKinds
                if verify {
                    let differences = try migration.verify()
                    guard differences.isEmpty else {
                        print("\(route): the stores differ")
                        for line in differences { print("  \(line)") }
                        throw ExitCode(1)
                    }
                    print("\(route): the destination holds everything the source does")
                    return
                }
                let report = try migration.run { report in
                    FileHandle.standardError.write(
                        Data("records: \(report.copied) copied, \(report.skipped) already there\n".utf8))
                }
                print("migrated \(route)")
                for line in report.lines { print("  \(line)") }
                if report.auditKept {
                    print("  key audit lines: the destination has a trail of its own; the source's was not copied")
                }
                if report.jobsEnded > 0 {
                    print(
                        "  jobs: \(report.jobsEnded) done or failed, not copied (their files stay on the source: "
                            + "cloak jobs mapping|advice|file, with the configuration pointing at it)")
                }
                if !report.jobsCancelled.isEmpty {
                    let cancelled = report.jobsCancelled
                    print(
                        "  jobs: \(cancelled.count) cancelled, not copied: they cannot resume on the destination "
                            + "(\(StoreMigration.named(cancelled, of: cancelled.count)))")
                }
                if report.unaliased > 0 {
                    print("  records without an alias (nothing reads them), not copied: \(report.unaliased)")
                }
                print(
                    "  \(report.sourceRecords) records in the source, \(report.destinationRecords) in the destination")
            } catch let exit as ExitCode {
                throw exit
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
