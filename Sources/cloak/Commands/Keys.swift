import ArgumentParser
import CloakCrypto
import CloakService
import CloakVault
import Foundation

struct Keys: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Manage the vault's keys: the wrapping key, and the key ring kept in the store.",
        discussion: """
            Every command reads --config like serve, and works while nodes serve (the ring is \
            replaced with a compare-and-set). Running nodes pick a rotation up within \
            vault.key_refresh_s. Exit 2: a configuration or key problem (nothing changed).
            """,
        subcommands: [Init.self, Rotate.self, Rewrap.self, Retire.self, Status.self, Migrate.self, Ref.self])

    /// The store and configuration a command works on; exit 2 when either cannot be opened.
    static func administration(_ options: ConfigOption) throws -> KeyAdministration {
        let configuration = try options.load(.administration)
        do {
            return KeyAdministration(
                settings: configuration.vault, environment: ProcessInfo.processInfo.environment,
                store: try VaultBootstrap.store(configuration.vault))
        } catch {
            fail("cannot open the store: \(error)")
        }
    }

    static func fail(_ message: String, code: Int32 = 2) -> Never {
        FileHandle.standardError.write(Data("cloak: \(message)\n".utf8))
        Foundation.exit(code)
    }

    /// Runs `body`, turning its failures into a message and exit 2.
    static func run<T>(_ body: () throws -> T) -> T {
        do { return try body() } catch { fail("\(error)") }
    }

    struct Init: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make the wrapping key vault.keys names (a key file, or an AES key on a PKCS#11 token) "
                + "and, for an empty store, a new key ring.")
        @OptionGroup var options: ConfigOption

        func run() throws {
            let admin = try Keys.administration(options)
            for line in Keys.run({ try admin.initialize() }) { print(line) }
        }
    }

    struct Rotate: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add a key version to the store's ring and make it current; older versions still open.")
        @OptionGroup var options: ConfigOption

        func run() throws {
            let admin = try Keys.administration(options)
            let result = Keys.run { try admin.rotate() }
            print(result.audit)
            print(
                "rotated: the current key is \(result.to) (was \(result.from)); running nodes use it within "
                    + "vault.key_refresh_s")
        }
    }

    struct Rewrap: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Re-seal every record still under an older key version with the current one, online.")
        @OptionGroup var options: ConfigOption
        @Option(help: "Records per transaction.") var batch: Int = 500

        func validate() throws {
            guard (1...100_000).contains(batch) else { throw ValidationError("--batch must be 1…100000") }
        }

        func run() throws {
            let admin = try Keys.administration(options)
            let terminal = isatty(STDOUT_FILENO) == 1
            let report = Keys.run {
                try admin.rewrap(batch: batch) { version, done, total in
                    if terminal {
                        let width = 30
                        let filled = total == 0 ? width : min(width, done * width / total)
                        let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
                        let end = done >= total ? "\n" : ""
                        FileHandle.standardOutput.write(Data("\r\(version) [\(bar)] \(done)/\(total)\(end)".utf8))
                    } else {
                        print("\(version): \(done)/\(total) records re-sealed")
                    }
                }
            }
            print(report.audit)
            let counts = report.resealed.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }
            print(
                "re-sealed with \(report.current): "
                    + (counts.isEmpty ? "nothing was under an older version" : counts.joined(separator: ", "))
                    + (report.skipped > 0 ? "; \(report.skipped) changed meanwhile (run again)" : ""))
        }
    }

    struct Retire: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove a key version from the ring once no record uses it (never the current one).")
        @OptionGroup var options: ConfigOption
        @Argument(help: "The version, e.g. k1.") var version: String

        func run() throws {
            let admin = try Keys.administration(options)
            do {
                print(try admin.retire(version))
                print("retired \(version)")
            } catch let refusal as KeyAdministration.RetireRefusal {
                Keys.fail(refusal.description, code: 1)
            } catch {
                Keys.fail("\(error)")
            }
        }
    }

    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Key versions, which is current, records per version, where the wrapping key is.")
        @OptionGroup var options: ConfigOption
        @Flag(help: "Print one JSON object.") var json = false

        func run() throws {
            let admin = try Keys.administration(options)
            let status = Keys.run { try admin.status() }
            if json {
                print(status.json)
                return
            }
            print("wrapping key: \(status.wrapping) (\(status.location))")
            for version in status.versions {
                print(
                    "\(version.id)\(version.id == status.current ? " (current)" : ""): \(status.described(version.id))")
            }
            for orphan in status.orphans {
                print("\(orphan.id) (not in the ring): \(orphan.records) records that cannot be opened")
            }
        }
    }

    struct Migrate: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Move the key ring under a PKCS#11 token's key (run with the vault's current configuration).")
        @OptionGroup var options: ConfigOption
        @Option(help: "pkcs11:token=…;object=…?module-path=…&pin-source=file:…|env:…") var to: String

        func run() throws {
            let admin = try Keys.administration(options)
            let result = Keys.run { try admin.migrate(to: to) }
            if let audit = result.audit { print(audit) }
            for line in result.lines { print(line) }
        }
    }

    struct Ref: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the reference audit lines show for an alias (alias_ref), to find its lines.",
            discussion: "The alias is read from standard input (one per line), never from the command line (ps).")
        @OptionGroup var options: ConfigOption

        func run() throws {
            let configuration = try options.load(.administration)
            let ring = Keys.run {
                try VaultBootstrap.keys(
                    configuration.vault, environment: ProcessInfo.processInfo.environment, logger: nil,
                    store: try VaultBootstrap.store(configuration.vault), firstRun: false
                ).ring
            }
            while let line = readLine() {
                let alias = line.trimmingCharacters(in: .whitespaces)
                if !alias.isEmpty { print(Vault.auditReference(alias, keys: ring)) }
            }
        }
    }
}
