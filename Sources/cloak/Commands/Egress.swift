import ArgumentParser
import CloakCrypto
import CloakService
import Foundation

struct Egress: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The egress doors' certificate authority.", subcommands: [CA.self])

    struct CA: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "ca",
            abstract:
                "Print the egress CA certificate (PEM) for clients of the forward proxy to trust; makes the CA when it does not exist yet."
        )

        @OptionGroup var options: ConfigOption

        func run() throws {
            let configuration = try options.load()
            do {
                let ca = try CertificateAuthority.loadOrCreate(
                    certificate: configuration.egress.caCertificate,
                    key: configuration.egress.caKey)
                FileHandle.standardOutput.write(Data(ca.certificatePEM))
            } catch {
                FileHandle.standardError.write(Data("cloak: cannot open the egress CA: \(error)\n".utf8))
                throw ExitCode(2)
            }
        }
    }
}
