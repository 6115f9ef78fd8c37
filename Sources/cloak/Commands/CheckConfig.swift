import ArgumentParser
import CloakService
import Foundation

struct CheckConfig: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-config",
        abstract: "Check a configuration and print every problem with its YAML path.")

    @OptionGroup var options: ConfigOption

    func run() throws {
        do {
            let c = try ServiceConfiguration.load(path: options.config)
            print("\(options.config): OK (\(c.forms.count) forms, \(c.routes.count) routes, \(c.auth.count) tokens)")
            for warning in c.warnings { print("  warning: \(warning)") }
        } catch {
            print("\(options.config): \(error.issues.count) problem\(error.issues.count == 1 ? "" : "s")")
            for issue in error.issues { print("  \(issue)") }
            throw ExitCode(1)
        }
    }
}
