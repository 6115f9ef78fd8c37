import CloakTesting
import Foundation
import Testing

/// Runs a Python script over the pinned h11 (`scripts/test-python`, `CLOAK_TEST_PYTHON`): each
/// input goes to it as a file, and its standard output (one JSON document for all of them) comes
/// back. Shared by the parsers' differential tests.
enum H11 {
    static func run(_ script: String, inputs: [[UInt8]]) throws -> Any {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let file = "\(directory.path)/read.py"
        try script.write(toFile: file, atomically: true, encoding: .utf8)
        var paths: [String] = []
        for (k, input) in inputs.enumerated() {
            let path = "\(directory.path)/input-\(k)"
            try Data(input).write(to: URL(fileURLWithPath: path))
            paths.append(path)
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: ProcessInfo.processInfo.environment["CLOAK_TEST_PYTHON"]!)
        process.arguments = [file] + paths
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return try JSONSerialization.jsonObject(with: data)
    }
}
