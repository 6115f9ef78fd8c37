import ArgumentParser
import CloakService
import Foundation

@main
struct Cloak: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cloak",
        abstract: "A self-hosted secure-collect gateway: validate, alias and forward sensitive form fields.",
        subcommands: [
            Serve.self, CheckConfig.self, Healthcheck.self, Keys.self, Tokens.self, Bins.self, Reload.self, Store.self,
            Audit.self, Routes.self, Import.self, Export.self, Jobs.self,
            Egress.self,
            Elements.self,
            FF1Command.self, Version.self,
        ],
        defaultSubcommand: nil
    )
}

/// The version printed by `cloak version` and logged at start.
let cloakVersion = CloakService.version

struct ConfigOption: ParsableArguments {
    @Option(name: .long, help: "Path of the YAML configuration.")
    var config: String = "config/cloak.yaml"

    /// The configuration (or the `sections` a command needs of it), or exit 2 with every problem
    /// on standard error.
    func load(_ sections: ServiceConfiguration.Sections = .all) throws -> ServiceConfiguration {
        do {
            return try ServiceConfiguration.load(path: config, sections: sections)
        } catch {
            FileHandle.standardError.write(Data("cloak: invalid configuration \(config):\n\(error)\n".utf8))
            throw ExitCode(2)
        }
    }
}
