import Foundation

/// Runs a Python script with the pinned second implementations (`scripts/test-python`, whose
/// path `scripts/test` puts in `CLOAK_TEST_PYTHON`: h11, opentelemetry-proto, cryptography):
/// each input goes to it as a file, and its standard output (one JSON document for all of them)
/// comes back. Suites that use it are enabled only when `CLOAK_TEST_PYTHON` is set.
package enum TestPython {
    package static var isAvailable: Bool { ProcessInfo.processInfo.environment["CLOAK_TEST_PYTHON"] != nil }

    package static func run(_ script: String, inputs: [[UInt8]]) throws -> Any {
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
