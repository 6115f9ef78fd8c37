import Foundation

/// SoftHSM (Debian's `softhsm2`) as the tests' PKCS#11 token: one configuration and token folder
/// per test process (SoftHSM reads `SOFTHSM2_CONF` once, when the module is initialised), with
/// two tokens made up front, each with its own PIN.
package final class SoftHSM: Sendable {
    package static let module = "/usr/lib/softhsm/libsofthsm2.so"
    package static var isAvailable: Bool {
        FileManager.default.fileExists(atPath: module)
            && FileManager.default.fileExists(atPath: "/usr/bin/softhsm2-util")
    }

    /// The tokens: label and user PIN.
    package static let tokens = [(label: "cloak-a", pin: "4321-a"), (label: "cloak-b", pin: "8765-b")]

    /// The folder holding `softhsm2.conf` and the tokens.
    package let directory: String
    /// `SOFTHSM2_CONF=…` for subprocesses.
    package var environment: [String: String] { ["SOFTHSM2_CONF": directory + "/softhsm2.conf"] }

    /// The process's SoftHSM, made on first use; SOFTHSM2_CONF is set for the whole process.
    package static let shared: SoftHSM = {
        do { return try SoftHSM() } catch { fatalError("cannot set up SoftHSM: \(error)") }
    }()

    private init() throws {
        directory = NSTemporaryDirectory() + "cloak-softhsm-\(getpid())-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory + "/tokens", withIntermediateDirectories: true)
        try "directories.tokendir = \(directory)/tokens\nobjectstore.backend = file\nlog.level = ERROR\n".write(
            toFile: directory + "/softhsm2.conf", atomically: true, encoding: .utf8)
        setenv("SOFTHSM2_CONF", directory + "/softhsm2.conf", 1)
        for token in Self.tokens {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/softhsm2-util")
            process.arguments = [
                "--init-token", "--free", "--label", token.label, "--so-pin", "so-\(token.pin)", "--pin", token.pin,
            ]
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            process.waitUntilExit()
            guard process.terminationStatus == 0 else {
                throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "softhsm2-util failed"])
            }
        }
    }

    /// A PIN file (0600) in `folder` for `pin`, and the URI naming `object` on `token` with it.
    package func uri(token: String, object: String, pinFile: String) -> String {
        "pkcs11:token=\(token);object=\(object)?module-path=\(Self.module)&pin-source=file:\(pinFile)"
    }

    /// Writes `pin` (with a trailing newline, as `echo` would) to `path`, mode 0600.
    package static func writePIN(_ pin: String, to path: String) throws {
        guard
            FileManager.default.createFile(
                atPath: path, contents: Data((pin + "\n").utf8), attributes: [.posixPermissions: 0o600])
        else { throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path]) }
    }
}
