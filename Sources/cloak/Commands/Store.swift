import ArgumentParser
import CloakService
import CloakVault
import Foundation

struct Store: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Move the vault between stores.", subcommands: [Migrate.self])

    struct Migrate: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Copy every record, still sealed, from one store to another, and check the counts.",
            discussion: """
                Records are copied as they are (ciphertexts, fingerprints, aliases and their signatures, the
                key-check value): nothing is decrypted, and the same keys open the copy. Re-running is safe:
                records already copied are skipped. Stop the nodes writing to the source first.
                  cloak store migrate --from sqlite:data/cloak.db --to postgres://cloak:…@db:5432/cloak
                """)

        @Option(help: "The source store: sqlite:PATH or postgres://…") var from: String
        @Option(help: "The destination store: sqlite:PATH or postgres://…") var to: String

        func run() throws {
            do {
                let source = try VaultBootstrap.store(url: from)
                let destination = try VaultBootstrap.store(url: to)
                let report = try StoreMigration(from: source, to: destination).run { report in
                    FileHandle.standardError.write(Data("copied \(report.copied), already there \(report.skipped)\n".utf8))
                }
                print("migrated \(StoreURL.redacted(from)) -> \(StoreURL.redacted(to)): \(report.copied) copied, "
                      + "\(report.skipped) already there; \(report.sourceRecords) records in the source, "
                      + "\(report.destinationRecords) in the destination")
            } catch {
                FileHandle.standardError.write(Data("cloak: store migrate: \(error)\n".utf8))
                throw ExitCode(1)
            }
        }
    }
}
