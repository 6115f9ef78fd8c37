import Foundation

/// Certificates made by the `openssl` command for a test, in a temporary folder: a CA, a server
/// certificate for `localhost` and `127.0.0.1` signed by it, a client certificate signed by it
/// (mutual TLS), and an unrelated CA.
package struct TestCertificates: Sendable {
    package let directory: TemporaryDirectory
    package var caFile: String { "\(directory.path)/ca.pem" }
    package var otherCAFile: String { "\(directory.path)/other.pem" }
    package var serverCertificate: String { "\(directory.path)/server.pem" }
    package var serverKey: String { "\(directory.path)/server.key" }
    package var clientCertificate: String { "\(directory.path)/client.pem" }
    package var clientKey: String { "\(directory.path)/client.key" }

    package init() throws {
        directory = TemporaryDirectory()
        let d = directory.path
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try Self.openssl(
            ["req", "-x509"] + ec + [
                "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=Cloak Test CA",
            ], in: d)
        try Self.openssl(
            ["req", "-x509"] + ec + [
                "-keyout", "other.key", "-out", "other.pem", "-days", "2", "-subj", "/CN=Other CA",
            ], in: d)
        try "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n".write(
            toFile: "\(d)/server.ext", atomically: true, encoding: .utf8)
        try "extendedKeyUsage=clientAuth\n".write(toFile: "\(d)/client.ext", atomically: true, encoding: .utf8)
        for (name, cn) in [("server", "localhost"), ("client", "cloak-egress")] {
            try Self.openssl(
                ["req"] + ec + ["-keyout", "\(name).key", "-out", "\(name).csr", "-subj", "/CN=\(cn)"], in: d)
            try Self.openssl(
                [
                    "x509", "-req", "-in", "\(name).csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                    "-out", "\(name).pem", "-days", "2", "-extfile", "\(name).ext",
                ], in: d)
        }
    }

    package func remove() { directory.remove() }

    package static func openssl(_ arguments: [String], in directory: String) throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        p.arguments = arguments
        p.currentDirectoryURL = URL(fileURLWithPath: directory)
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else { throw CocoaError(.executableLoad) }
    }
}
