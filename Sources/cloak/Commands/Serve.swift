import ArgumentParser
import CloakService
import Foundation

struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the HTTP service until SIGTERM or SIGINT.")

    @OptionGroup var options: ConfigOption

    func run() throws {
        let configuration: ServiceConfiguration
        do {
            configuration = try ServiceConfiguration.load(path: options.config)
        } catch {
            FileHandle.standardError.write(Data("cloak: invalid configuration \(options.config):\n\(error)\n".utf8))
            throw ExitCode(2)
        }
        let service = CloakService(configuration: configuration)
        do {
            try ServiceRunner.run(service)
        } catch {
            FileHandle.standardError.write(Data("cloak: \(error)\n".utf8))
            throw ExitCode(1)
        }
    }
}
