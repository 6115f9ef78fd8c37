import ArgumentParser
import CloakCore
import CloakCrypto
import CloakService
import CloakVault
import Foundation

struct Bins: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Import the BIN table card attributes come from, and show the one in the store.",
        discussion: """
            The table lives in the vault's store as one versioned document, signed with a key \
            derived from the key ring vault.keys names: every node swaps to a new import within \
            bins.refresh_s. No row of any real BIN table ships with Cloak (docs/card-attributes.md).
            """,
        subcommands: [Import.self, Status.self, Rollback.self])

    /// The store and the ring's key; exit 2 when either cannot be opened or the ring is not the
    /// store's.
    static func administration(_ options: ConfigOption) throws -> BinTableAdministration {
        let (store, ring) = Tokens.storeAndRing(try options.load(.administration))
        return BinTableAdministration(store: store, ring: ring)
    }

    struct Import: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check every row of FILE and make it the table (prints its version and rows).",
            discussion: """
                Columns (CSV header or JSONL keys): low, high (equal lengths, 6 to 19 digits), \
                brand, funding (credit, debit, prepaid, charge, deferred_debit), segment (consumer, \
                commercial), issuer, country (ISO 3166-1 alpha-2, XK), currency (ISO 4217), \
                product. Any other column is refused unless --map renames it or --ignore-columns \
                names it. A table with any problem is refused whole, each problem named by its \
                line, and the table in the store stays as it was (exit 2). cloak bins rollback \
                goes back to the table before.
                """)
        @OptionGroup var options: ConfigOption
        @Argument(help: "The table: CSV with a header line, or JSON Lines.") var file: String
        @Option(help: "csv or jsonl (default: by the file's extension, else csv).") var format: String?
        @Option(help: "Renames the file's columns: source=column,… (e.g. bin_start=low,bank=issuer).")
        var map: String?
        @Option(help: "Columns of the file to read past: NAME,… (any other unknown column is refused).")
        var ignoreColumns: String?
        @Option(help: "What the table is (default: the file's name), shown by status and /metrics.") var source: String?

        var ignored: Set<String> {
            Set((ignoreColumns ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
                .subtracting([""])
        }

        func validate() throws {
            if let format, BinTableReader.Format(rawValue: format) == nil {
                throw ValidationError("--format is csv or jsonl")
            }
            if let map, BinTableReader.mapping(map) == nil {
                throw ValidationError(
                    "--map is source=column,… with columns among \(BinTableReader.columns.joined(separator: ", "))")
            }
            let mapped = Set(map.flatMap(BinTableReader.mapping)?.keys.map { $0 } ?? [])
            if let both = ignored.intersection(mapped.union(BinTableReader.columns)).sorted().first {
                throw ValidationError("--ignore-columns names \(both), which is read (a column, or mapped by --map)")
            }
        }

        func run() throws {
            let admin = try Bins.administration(options)
            guard let data = FileManager.default.contents(atPath: file) else { Keys.fail("cannot read \(file)") }
            let chosen =
                format.flatMap(BinTableReader.Format.init(rawValue:))
                ?? (file.hasSuffix(".jsonl") ? .jsonl : .csv)
            let reader = BinTableReader(
                format: chosen, mapping: map.flatMap(BinTableReader.mapping) ?? [:], ignored: ignored)
            let table: BinTableReader.Table
            do {
                table = try reader.read([UInt8](data))
            } catch {
                Keys.fail("the table is refused; the store's is unchanged:\n\(error)")
            }
            let name = source ?? URL(fileURLWithPath: file).lastPathComponent
            do {
                let document = try admin.importTable(table, source: name, now: Int64(Date().timeIntervalSince1970))
                print(String(decoding: JSONWriter.encode(document.json), as: UTF8.self))
            } catch {
                Keys.fail("\(error)")
            }
        }
    }

    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "The store's table: version, rows, source and age (exit 1: none imported).")
        @OptionGroup var options: ConfigOption

        func run() throws {
            let admin = try Bins.administration(options)
            let found: (document: BinTableDocument, verified: Bool)?
            do { found = try admin.status() } catch { Keys.fail("\(error)") }
            guard let found else {
                FileHandle.standardError.write(Data("cloak: no BIN table was imported\n".utf8))
                throw ExitCode(1)
            }
            guard found.verified else {
                Keys.fail("the store's BIN table header does not verify with the key ring: import the table again")
            }
            let now = Int64(Date().timeIntervalSince1970)
            let configuration = try options.load(.administration)
            let nodes: [BinTableNode]
            do { nodes = try admin.nodes() } catch { Keys.fail("\(error)") }
            var json = found.document.json
            if case .object(var members) = json {
                members.append(("age_s", .int(max(0, Int(now - found.document.importedAt)))))
                // What each node serves, from its own heartbeat (written every bins.refresh_s).
                members.append(
                    (
                        "nodes",
                        .array(
                            nodes.map {
                                $0.json(
                                    now: now, current: found.document,
                                    staleAfter: Int64(3 * configuration.binsRefreshSeconds))
                            })
                    ))
                json = .object(members)
            }
            print(String(decoding: JSONWriter.encode(json), as: UTF8.self))
        }
    }

    struct Rollback: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make the table before the current one the table again (as a new version).",
            discussion: """
                The store keeps the table before the current one until the next import; it is \
                restored only when its SHA-256 is the one the current header names under its MAC \
                (a table imported before this check existed cannot be rolled back). Without --yes, \
                prints what would be restored and changes nothing.
                """)
        @OptionGroup var options: ConfigOption
        @Flag(help: "Restore it.") var yes = false

        func run() throws {
            let admin = try Bins.administration(options)
            do {
                let candidate = try admin.previousTable()
                if !yes {
                    print(
                        "would restore \(candidate.name) (\(candidate.table.rows.count) rows) as the next version; "
                            + "run again with --yes")
                    return
                }
                let document = try admin.rollback(to: candidate, now: Int64(Date().timeIntervalSince1970))
                print(String(decoding: JSONWriter.encode(document.json), as: UTF8.self))
            } catch {
                Keys.fail("\(error)")
            }
        }
    }
}
