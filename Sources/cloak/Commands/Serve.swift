import ArgumentParser
import CloakCrypto
import CloakHTTP
import CloakService
import CloakVault
import Foundation

struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the HTTP service until SIGTERM or SIGINT.")

    @OptionGroup var options: ConfigOption

    func run() throws {
        // Block SIGTERM, SIGINT and SIGHUP before any thread starts (the vault's included): every
        // thread inherits the mask, and only ServiceRunner's sigwait takes them.
        var signals = ServiceRunner.signals
        pthread_sigmask(SIG_BLOCK, &signals, nil)
        let configuration = try options.load()
        let bootLogger = CloakService(configuration: configuration).logger
        let vault: CloakVault.Vault
        let keyRefresh: KeyRefresh
        do {
            (vault, keyRefresh) = try VaultBootstrap.openWithKeys(
                configuration.vault, environment: ProcessInfo.processInfo.environment,
                logger: bootLogger,
                audit: VaultBootstrap.auditSettings(
                    configuration, node: "\(ProcessInfo.processInfo.hostName):\(configuration.server.port)",
                    logger: bootLogger))
        } catch let error as VaultOpenError {
            // The keys do not match the store: a configuration problem, not a transient one.
            FileHandle.standardError.write(Data("cloak: cannot open the vault: \(error)\n".utf8))
            throw ExitCode(2)
        } catch let error as VaultBootstrap.Error {
            FileHandle.standardError.write(Data("cloak: cannot open the vault: \(error)\n".utf8))
            throw ExitCode(2)
        } catch {
            FileHandle.standardError.write(Data("cloak: cannot open the vault: \(error)\n".utf8))
            throw ExitCode(1)
        }
        var egressCA: CertificateAuthority?
        if configuration.egress.listen != nil {
            do {
                egressCA = try CertificateAuthority.loadOrCreate(
                    certificate: configuration.egress.caCertificate,
                    key: configuration.egress.caKey)
            } catch {
                FileHandle.standardError.write(Data("cloak: cannot open the egress CA: \(error)\n".utf8))
                throw ExitCode(2)
            }
        }
        var traces: TraceExport?
        if let settings = configuration.traces {
            do {
                traces = try TraceExport(settings, logger: bootLogger)
            } catch {
                FileHandle.standardError.write(Data("cloak: cannot start the trace export: \(error)\n".utf8))
                throw ExitCode(2)
            }
        }
        let service = CloakService(configuration: configuration, vault: vault, egressCA: egressCA, traces: traces)
        do {
            keyRefresh.start()
            let path = options.config
            try ServiceRunner.run(
                service, reload: { try ServiceConfiguration.load(path: path) },
                onStopped: {
                    traces?.stop()
                    keyRefresh.stop()
                    vault.close()
                })
        } catch {
            FileHandle.standardError.write(Data("cloak: \(error)\n".utf8))
            throw ExitCode(1)
        }
    }
}
