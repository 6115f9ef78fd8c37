import CloakCrypto
import Foundation
import Testing

/// The egress CA: made once, kept, and signing leaves that `openssl verify` accepts.
struct CertificateAuthorityTests {
    func temporary() -> String {
        let path = NSTemporaryDirectory() + "cloak-ca-" + UUID().uuidString
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    func openssl(_ arguments: [String], in directory: String) throws -> (Int32, String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        p.arguments = arguments
        p.currentDirectoryURL = URL(fileURLWithPath: directory)
        let out = Pipe()
        p.standardOutput = out
        p.standardError = out
        try p.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        return (p.terminationStatus, text)
    }

    @Test(arguments: ["api.stripe.com", "127.0.0.1", "::1"])
    func leavesVerifyAgainstTheCAForTheirHost(host: String) throws {
        let d = temporary()
        defer { try? FileManager.default.removeItem(atPath: d) }
        let ca = try CertificateAuthority.loadOrCreate(certificate: "\(d)/ca.pem", key: "\(d)/ca-key.pem")
        let leaf = try ca.issue(host: host)
        try Data(leaf.certificateChainPEM).write(to: URL(fileURLWithPath: "\(d)/leaf.pem"))
        let check = host.contains(":") || host.first!.isNumber ? ["-verify_ip", host] : ["-verify_hostname", host]
        let (status, text) = try openssl(
            ["verify", "-CAfile", "ca.pem", "-purpose", "sslserver"] + check + ["leaf.pem"], in: d)
        #expect(status == 0, "\(text)")
        let (other, _) = try openssl(
            ["verify", "-CAfile", "ca.pem", "-verify_hostname", "evil.example", "leaf.pem"], in: d)
        #expect(other != 0)
    }

    @Test func theCAIsMadeOnceWithAPrivateKeyFileAndLoadedAfterwards() throws {
        let d = temporary()
        defer { try? FileManager.default.removeItem(atPath: d) }
        let first = try CertificateAuthority.loadOrCreate(certificate: "\(d)/ca.pem", key: "\(d)/ca-key.pem")
        let mode = try FileManager.default.attributesOfItem(atPath: "\(d)/ca-key.pem")[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let again = try CertificateAuthority.loadOrCreate(certificate: "\(d)/ca.pem", key: "\(d)/ca-key.pem")
        #expect(again.certificatePEM == first.certificatePEM)
        let (status, text) = try openssl(["x509", "-in", "ca.pem", "-noout", "-text"], in: d)
        #expect(status == 0 && text.contains("CA:TRUE") && text.contains("Certificate Sign"))
    }

    @Test func oneFileWithoutTheOtherIsRefused() throws {
        let d = temporary()
        defer { try? FileManager.default.removeItem(atPath: d) }
        _ = try CertificateAuthority.loadOrCreate(certificate: "\(d)/ca.pem", key: "\(d)/ca-key.pem")
        try FileManager.default.removeItem(atPath: "\(d)/ca-key.pem")
        #expect(throws: CryptoError.self) {
            try CertificateAuthority.loadOrCreate(certificate: "\(d)/ca.pem", key: "\(d)/ca-key.pem")
        }
        #expect(!FileManager.default.fileExists(atPath: "\(d)/ca-key.pem"), "a lost key is never silently replaced")
    }

    @Test(arguments: ["", "a,b", "a b", "x\ny"])
    func hostsThatAreNoNamesAreRefused(host: String) throws {
        let ca = try CertificateAuthority.create()
        #expect(throws: CryptoError.self) { try ca.issue(host: host) }
    }
}

/// Egress CA files that are not what they should be: refused at load with a clear error, never
/// replaced, never prompted for.
struct CertificateAuthorityFileTests {
    let helper = CertificateAuthorityTests()

    /// A CA made in a new folder; returns the folder.
    func madeCA() throws -> String {
        let d = helper.temporary()
        _ = try CertificateAuthority.loadOrCreate(certificate: "\(d)/ca.pem", key: "\(d)/ca-key.pem")
        return d
    }

    func loadError(_ d: String) -> String? {
        do {
            _ = try CertificateAuthority.loadOrCreate(certificate: "\(d)/ca.pem", key: "\(d)/ca-key.pem")
            return nil
        } catch {
            return error.description
        }
    }

    @Test func garbageInEitherFileIsRefused() throws {
        for file in ["ca.pem", "ca-key.pem"] {
            let d = try madeCA()
            defer { try? FileManager.default.removeItem(atPath: d) }
            let before = FileManager.default.contents(atPath: "\(d)/ca.pem")
            try Data("-----BEGIN GARBAGE-----\n\u{0}\u{1}not pem at all\n".utf8).write(
                to: URL(fileURLWithPath: "\(d)/\(file)"))
            // The key owner-only, so its content is what is refused (not its mode).
            if file == "ca-key.pem" { #expect(chmod("\(d)/ca-key.pem", 0o600) == 0) }
            let error = try #require(loadError(d), "\(file)")
            #expect(error.contains(file), "\(error)")
            if file == "ca-key.pem" { #expect(FileManager.default.contents(atPath: "\(d)/ca.pem") == before) }
        }
    }

    @Test func aKeyOfAnotherCAIsRefused() throws {
        let d = try madeCA(), other = try madeCA()
        defer {
            try? FileManager.default.removeItem(atPath: d)
            try? FileManager.default.removeItem(atPath: other)
        }
        try FileManager.default.removeItem(atPath: "\(d)/ca-key.pem")
        try FileManager.default.copyItem(atPath: "\(other)/ca-key.pem", toPath: "\(d)/ca-key.pem")
        #expect(chmod("\(d)/ca-key.pem", 0o600) == 0)
        #expect(loadError(d)?.contains("does not match") == true)
    }

    @Test func anEncryptedKeyIsRefusedWithoutAPrompt() throws {
        let d = try madeCA()
        defer { try? FileManager.default.removeItem(atPath: d) }
        let (status, text) = try helper.openssl(
            ["pkey", "-in", "ca-key.pem", "-aes256", "-passout", "pass:secret-passphrase", "-out", "encrypted.pem"],
            in: d)
        #expect(status == 0, "\(text)")
        try FileManager.default.removeItem(atPath: "\(d)/ca-key.pem")
        try FileManager.default.moveItem(atPath: "\(d)/encrypted.pem", toPath: "\(d)/ca-key.pem")
        #expect(chmod("\(d)/ca-key.pem", 0o600) == 0)
        let error = try #require(loadError(d))
        #expect(error.contains("unencrypted"), "\(error)")
        #expect(!error.contains("secret-passphrase"))
    }

    /// A key group or others can read is refused, as ssh refuses such a private key, with the
    /// command that fixes it; the certificate may be world-readable (it is public).
    @Test(arguments: [0o644, 0o640, 0o620, 0o604])
    func aKeyGroupOrOthersCanUseIsRefused(mode: Int) throws {
        let d = try madeCA()
        defer { try? FileManager.default.removeItem(atPath: d) }
        let key = "\(d)/ca-key.pem"
        #expect(chmod(key, mode_t(mode)) == 0)
        let error = try #require(loadError(d))
        #expect(error.contains("\(key) is"), "\(error)")
        #expect(
            error.contains("by group or others (mode 0\(String(mode, radix: 8))); run chmod 600 \(key)"), "\(error)")
        #expect(chmod(key, 0o600) == 0)
        #expect(chmod("\(d)/ca.pem", 0o644) == 0)
        #expect(loadError(d) == nil)
    }
}
