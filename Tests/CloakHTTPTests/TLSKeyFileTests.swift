import CloakTesting
import Foundation
import Testing

@testable import CloakHTTP

/// A TLS key file that is encrypted is refused with an error at start, never prompted for (the
/// server would otherwise wait on the terminal for a passphrase).
@Suite struct TLSKeyFileTests {
    @Test func anEncryptedServerKeyIsRefused() throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let d = certificates.directory.path
        try TestCertificates.openssl(
            ["pkey", "-in", "server.key", "-aes256", "-passout", "pass:pw", "-out", "encrypted.key"], in: d)
        #expect(throws: HTTPServerError.self) {
            _ = try TLSServerContext(certificateChain: certificates.serverCertificate, privateKey: "\(d)/encrypted.key")
        }
        let chain = try Array(Data(contentsOf: URL(fileURLWithPath: certificates.serverCertificate)))
        let encrypted = try Array(Data(contentsOf: URL(fileURLWithPath: "\(d)/encrypted.key")))
        #expect(throws: HTTPServerError.self) {
            _ = try TLSServerContext(certificateChainPEM: chain, privateKeyPEM: encrypted)
        }
        // The same key unencrypted loads.
        _ = try TLSServerContext(certificateChain: certificates.serverCertificate, privateKey: certificates.serverKey)
    }

    @Test func anEncryptedClientKeyIsRefused() throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let d = certificates.directory.path
        try TestCertificates.openssl(
            ["pkey", "-in", "client.key", "-aes256", "-passout", "pass:pw", "-out", "encrypted.key"], in: d)
        #expect(throws: UpstreamError.self) {
            _ = try TLSClientContext(
                caFile: certificates.caFile,
                clientCertificate: .init(
                    certificateChain: certificates.clientCertificate, privateKey: "\(d)/encrypted.key"))
        }
    }
}
