import ArgumentParser
import CloakCrypto
import CloakService
import CloakVault
import Foundation

struct Keys: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Manage the vault's key file.",
        subcommands: [Init.self, Rotate.self, Ref.self])

    /// The key file `vault.keys` names (`file:PATH`).
    static func path(_ options: ConfigOption) throws -> String {
        let configuration: ServiceConfiguration
        do { configuration = try ServiceConfiguration.load(path: options.config) } catch {
            throw ValidationError("invalid configuration \(options.config):\n\(error)")
        }
        guard configuration.vault.keys.hasPrefix("file:") else {
            throw ValidationError(
                "vault.keys is \(configuration.vault.keys); key files are managed only for file: keys")
        }
        return String(configuration.vault.keys.dropFirst(5))
    }

    struct Init: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write a new key file (mode 0600); refuses to overwrite one.")
        @OptionGroup var options: ConfigOption

        func run() throws {
            let path = try Keys.path(options)
            let ring = KeyRing.generate()
            do { try ring.write(path: path, replace: false) } catch {
                FileHandle.standardError.write(Data("cloak: \(error)\n".utf8))
                throw ExitCode(1)
            }
            print("wrote \(path) with key \(ring.currentID)")
        }
    }

    struct Ref: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the reference audit lines show for an alias (alias_ref), to find its lines.",
            discussion: "The alias is read from standard input (one per line), never from the command line (ps).")
        @OptionGroup var options: ConfigOption

        func run() throws {
            let configuration: ServiceConfiguration
            do { configuration = try ServiceConfiguration.load(path: options.config) } catch {
                throw ValidationError("invalid configuration \(options.config):\n\(error)")
            }
            let ring: KeyRing
            do {
                let store = try VaultBootstrap.store(configuration.vault)
                ring = try VaultBootstrap.keyRing(
                    configuration.vault, environment: ProcessInfo.processInfo.environment,
                    logger: nil, store: store)
            } catch {
                FileHandle.standardError.write(Data("cloak: \(error)\n".utf8))
                throw ExitCode(1)
            }
            while let line = readLine() {
                let alias = line.trimmingCharacters(in: .whitespaces)
                if !alias.isEmpty { print(Vault.auditReference(alias, keys: ring)) }
            }
        }
    }

    struct Rotate: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add a new key and make it current; records sealed with older keys stay readable.")
        @OptionGroup var options: ConfigOption

        func run() throws {
            let path = try Keys.path(options)
            do {
                let ring = try KeyRing.load(path: path).rotated()
                try ring.write(path: path, replace: true)
                print(
                    "rotated \(path): current key is \(ring.currentID) (\(ring.keys.count) keys); restart cloak to use it"
                )
            } catch {
                FileHandle.standardError.write(Data("cloak: \(error)\n".utf8))
                throw ExitCode(1)
            }
        }
    }
}
