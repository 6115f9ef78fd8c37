import ArgumentParser
import CloakCore
import CloakService
import CloakVault
import Foundation

struct Audit: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The audit events in the store.",
        subcommands: [Verify.self])

    struct Verify: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check every audit chain in the store; exit 1 naming the first broken event.",
            discussion: """
                Each event's MAC is checked with the key ring's audit key, each chain for gaps and \
                for a start the retention sweep did not record. Give the nodes' logs with --heads: \
                every `audit head` line in them must still be in the store, so a chain cut off at \
                its end is found too.
                """)
        @OptionGroup var options: ConfigOption
        @Option(name: .long, help: "A node's log file (JSON lines); its `audit head` lines are checked. Repeatable.")
        var heads: [String] = []

        func run() throws {
            let configuration = try options.load(.administration)
            var logged: [AuditVerifier.Head] = []
            for path in heads {
                guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                    FileHandle.standardError.write(Data("cloak: cannot read \(path)\n".utf8))
                    throw ExitCode(2)
                }
                logged += Self.heads(in: text)
            }
            let store = Keys.run { try VaultBootstrap.store(configuration.vault) }
            let ring = Keys.run {
                try VaultBootstrap.keys(
                    configuration.vault, environment: ProcessInfo.processInfo.environment, logger: nil,
                    store: store, firstRun: false
                ).ring
            }
            do {
                let checked = try Vault.verifyAudit(store, keys: ring, heads: logged)
                print("ok: \(checked.events) events in \(checked.chains) chains, \(logged.count) logged heads found")
            } catch let broken as AuditVerifier.Break {
                FileHandle.standardError.write(Data("cloak: audit trail broken: \(broken)\n".utf8))
                throw ExitCode(1)
            } catch {
                FileHandle.standardError.write(Data("cloak: cannot read the audit events: \(error)\n".utf8))
                throw ExitCode(2)
            }
        }

        /// The `audit head` lines of a JSON log (other lines, and lines that are not JSON, skipped).
        static func heads(in log: String) -> [AuditVerifier.Head] {
            log.split(separator: "\n").compactMap { line in
                guard line.contains("\"audit head\""), let value = try? JSONParser().parse(String(line)),
                    value["msg"]?.stringValue == "audit head", let chain = value["chain"]?.stringValue,
                    let seqText = value["seq"]?.stringValue ?? value["seq"].flatMap(numberText),
                    let seq = Int64(seqText), let hex = value["mac"]?.stringValue, let mac = bytes(hex: hex)
                else { return nil }
                return AuditVerifier.Head(chain: chain, seq: seq, mac: mac)
            }
        }

        private static func numberText(_ value: JSONValue) -> String? {
            if case let .number(text) = value { return text }
            return nil
        }

        private static func bytes(hex: String) -> [UInt8]? {
            let digits = Array(hex.utf8)
            guard digits.count == 64 else { return nil }
            var out: [UInt8] = []
            for i in stride(from: 0, to: 64, by: 2) {
                guard let byte = UInt8(String(decoding: digits[i..<i + 2], as: UTF8.self), radix: 16) else {
                    return nil
                }
                out.append(byte)
            }
            return out
        }
    }
}
