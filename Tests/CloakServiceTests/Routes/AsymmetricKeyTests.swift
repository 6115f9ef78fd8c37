import CloakCrypto
import CloakTesting
import Foundation
import Testing

/// The PEM forms a route step's `file:` key may take, and the ones it refuses without quoting.
struct AsymmetricKeyTests {
    static let keys = StepKeys.shared

    @Test func aCertificateGivesItsPublicKey() throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let key = try AsymmetricKey.read(file: certificates.serverCertificate)
        #expect(!key.isPrivate)
        #expect(key.kind == .rsa || key.kind == .ecP256)
    }

    @Test func eachKindSignsAndItsPublicHalfVerifies() throws {
        for (name, algorithms) in [
            ("rsa", [SignatureAlgorithm.rsaPKCS1SHA256, .rsaPSSSHA256, .rsaPSSSHA512]), ("ec", [.ecdsaP256SHA256]),
            ("ed25519", [.ed25519]),
        ] {
            let privateKey = try AsymmetricKey.read(file: Self.keys.privateKey(name))
            let publicKey = try AsymmetricKey.read(file: Self.keys.publicKey(name))
            for algorithm in algorithms {
                let message = Array("message for \(algorithm)".utf8)
                let signature = try privateKey.sign(message, algorithm)
                if algorithm == .ecdsaP256SHA256 { #expect(signature.count == 64) }
                #expect(publicKey.verify(signature, over: message, algorithm))
                #expect(!publicKey.verify(signature, over: message + [0], algorithm))
            }
            #expect(throws: CryptoError.self) { try publicKey.sign([1], algorithms[0]) }
        }
        let rsa = try AsymmetricKey.read(file: Self.keys.privateKey("rsa"))
        #expect(throws: CryptoError.self) { try rsa.sign([1], .ed25519) }
        let sealed = try AsymmetricKey.read(file: Self.keys.publicKey("rsa")).encryptOAEPSHA256([1, 2, 3])
        #expect(try rsa.decryptOAEPSHA256(sealed) == [1, 2, 3])
    }

    @Test(arguments: [
        "not a key", "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n",
        "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n",
        "-----BEGIN PRIVATE KEY-----\nc2VjcmV0LWtleS1ieXRlcw==\n-----END PRIVATE KEY-----\n",
    ])
    func whatIsNotAUsableKeyIsRefusedWithoutQuotingIt(pem: String) {
        #expect {
            try AsymmetricKey.read(pem: Array(pem.utf8))
        } throws: { error in
            let text = String(describing: error)
            return !text.contains("c2VjcmV0") && !text.contains("AAAA")
        }
    }
}
