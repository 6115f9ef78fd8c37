import ArgumentParser
import CloakService

struct Elements: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Cloak Elements, the hosted card fields (docs/elements.md).", subcommands: [Integrity.self])

    struct Integrity: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Print the Subresource Integrity value (sha384-…) of the cloak.js this binary serves, for the page's <script integrity>."
        )

        func run() {
            print(ElementsAssets.loaderIntegrity)
        }
    }
}
