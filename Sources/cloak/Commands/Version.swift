import ArgumentParser

struct Version: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print the version.")

    func run() {
        print("cloak \(cloakVersion)")
    }
}
