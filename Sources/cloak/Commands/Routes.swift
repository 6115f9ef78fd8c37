import ArgumentParser
import CloakCore
import CloakService
import Foundation

struct Routes: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The configuration's routes.",
        subcommands: [Test.self])

    struct Test: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show what a route would send for a sample request, without sending anything.",
            discussion: """
                The sample is a JSON document: {"method": "POST", "path": "/v1/charges", "headers": \
                {"Content-Type": "application/json"}, "body": {...}}. Every value a selector takes is \
                shown as a marker naming the selector; the route's steps sign with throwaway keys of \
                their keys' kinds. Nothing touches the vault or a configured key, and nothing leaves \
                this machine. Exit 0: the route would send; 1: it would refuse (the report says why); \
                2: the route or the sample is wrong.
                """)
        @OptionGroup var options: ConfigOption
        @Argument(help: "The route's id (inbound or egress).") var route: String
        @Option(name: .long, help: "The sample request (JSON), or - for standard input.") var request: String

        func run() throws {
            let configuration = try options.load()
            let bytes: Data?
            if request == "-" {
                bytes = FileHandle.standardInput.readDataToEndOfFile()
            } else {
                bytes = FileManager.default.contents(atPath: request)
            }
            guard let bytes, bytes.count <= 1 << 20 else {
                FileHandle.standardError.write(Data("cloak: cannot read \(request) (at most 1 MiB)\n".utf8))
                throw ExitCode(2)
            }
            do {
                let tested = try RouteInspector.test(configuration, route: route, sample: Array(bytes))
                print(JSONWriter.string(tested.report))
                if !tested.wouldSend { throw ExitCode(1) }
            } catch let error as CloakError {
                FileHandle.standardError.write(Data("cloak: \(error.message)\n".utf8))
                throw ExitCode(2)
            }
        }
    }
}
