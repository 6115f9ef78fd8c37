import CloakCrypto
import CloakTesting
import Foundation
import Synchronization
import Testing

/// Private keys on a PKCS#11 token (SoftHSM): made by `openssl genpkey`, imported with
/// `softhsm2-util --import` as an operator would, used through the token; every signature is
/// checked by the openssl command line, not by Cloak.
@Suite(
    .serialized,
    .enabled(
        if: SoftHSM.isAvailable && FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl"),
        "needs softhsm2 and openssl (scripts/install-deps)"))
struct PKCS11PrivateKeyTests {
    let hsm = SoftHSM.shared
    let directory = TemporaryDirectory()

    static let openssl = "/usr/bin/openssl"
    static let rsa = ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"]
    static let p256 = ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"]
    static let message = Array(
        "POST /v1/charges\ncontent-digest: sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:\n".utf8)
    static let otherMessage = Array("GET /v1/charges\n".utf8)

    var token: (label: String, pin: String) { SoftHSM.tokens[0] }

    struct SetupFailure: Error, CustomStringConvertible {
        let description: String
    }

    /// Runs `tool` with SoftHSM's configuration: its exit status and what it printed.
    @discardableResult
    func run(_ tool: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(hsm.environment) { _, new in new }
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: output, as: UTF8.self))
    }

    /// A setup step that must succeed.
    func mustRun(_ tool: String, _ arguments: [String]) throws {
        let (status, output) = try run(tool, arguments)
        guard status == 0 else { throw SetupFailure(description: "\(tool) \(arguments[0]) failed: \(output)") }
    }

    /// `bytes` in a new file of the test's folder; its path.
    func write(_ bytes: [UInt8], _ name: String) throws -> String {
        let path = "\(directory.path)/\(name)-\(UUID().uuidString.prefix(8))"
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// A key pair made by `openssl genpkey options`, imported onto the token under `label` (a
    /// fresh one unless given) with an ID of its own; the label and the public key's PEM file.
    func importKey(_ options: [String], label: String? = nil) throws -> (label: String, publicKey: String) {
        let label = label ?? "pk-\(UUID().uuidString.prefix(8).lowercased())"
        let base = "\(directory.path)/\(label)-\(UUID().uuidString.prefix(8))"
        try mustRun(Self.openssl, ["genpkey"] + options + ["-out", base + ".pem"])
        try mustRun(Self.openssl, ["pkey", "-in", base + ".pem", "-pubout", "-out", base + ".pub.pem"])
        let id = UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        try mustRun(
            "/usr/bin/softhsm2-util",
            ["--import", base + ".pem", "--token", token.label, "--label", label, "--id", id, "--pin", token.pin])
        return (label, base + ".pub.pem")
    }

    /// The private key labelled `label` on the token, through a URI and a PIN file.
    func openKey(_ label: String) throws -> PKCS11PrivateKey? {
        let pinFile = "\(directory.path)/pin-\(UUID().uuidString.prefix(8))"
        try SoftHSM.writePIN(token.pin, to: pinFile)
        let uri = try PKCS11URI(parsing: hsm.uri(token: token.label, object: label, pinFile: pinFile))
        return try PKCS11PrivateKey.open(uri, pin: try uri.pin(environment: [:]))
    }

    /// Whether `openssl dgst options -verify` accepts `signature` over `message`.
    func opensslVerifies(_ signature: [UInt8], _ message: [UInt8], _ publicKey: String, _ options: [String])
        throws -> Bool
    {
        let signatureFile = try write(signature, "sig")
        let messageFile = try write(message, "msg")
        let arguments = ["dgst"] + options + ["-verify", publicKey, "-signature", signatureFile, messageFile]
        return try run(Self.openssl, arguments).status == 0
    }

    /// Whether `openssl pkeyutl -verify -rawin` accepts the Ed25519 `signature` over `message`.
    func opensslVerifiesEd25519(_ signature: [UInt8], _ message: [UInt8], _ publicKey: String) throws -> Bool {
        let signatureFile = try write(signature, "sig")
        let messageFile = try write(message, "msg")
        let arguments = [
            "pkeyutl", "-verify", "-pubin", "-inkey", publicKey, "-rawin", "-in", messageFile,
            "-sigfile", signatureFile,
        ]
        return try run(Self.openssl, arguments).status == 0
    }

    /// `r ‖ s` (32 bytes each) as DER `ECDSA-Sig-Value`, the form openssl verifies.
    static func der(_ raw: [UInt8]) -> [UInt8] {
        func integer(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
            var value = Array(bytes.drop(while: { $0 == 0 }))
            if value.isEmpty { value = [0] }
            if value[0] & 0x80 != 0 { value.insert(0, at: 0) }
            return [0x02, UInt8(value.count)] + value
        }
        let body = integer(raw.prefix(32)) + integer(raw.dropFirst(32))
        return [0x30, UInt8(body.count)] + body
    }

    // MARK: RSA

    @Test func anRSAKeySignsThreeWaysThatOpenSSLVerifies() throws {
        let (label, publicKey) = try importKey(Self.rsa)
        let key = try #require(try openKey(label))
        #expect(key.kind == .rsa && key.bits == 2048)

        let pkcs1 = try key.sign(Self.message, .rsaPKCS1SHA256)
        #expect(pkcs1.count == 256)
        #expect(try key.sign(Self.message, .rsaPKCS1SHA256) == pkcs1)  // PKCS #1 v1.5 is deterministic
        #expect(try opensslVerifies(pkcs1, Self.message, publicKey, ["-sha256"]))
        #expect(try !opensslVerifies(pkcs1, Self.otherMessage, publicKey, ["-sha256"]))

        // openssl checks the salt length exactly: 32 bytes with SHA-256, 64 with SHA-512.
        let pss256 = try key.sign(Self.message, .rsaPSSSHA256)
        let pss256Options = ["-sha256", "-sigopt", "rsa_padding_mode:pss", "-sigopt", "rsa_pss_saltlen:32"]
        #expect(pss256.count == 256)
        #expect(try opensslVerifies(pss256, Self.message, publicKey, pss256Options))
        #expect(try !opensslVerifies(pss256, Self.otherMessage, publicKey, pss256Options))

        let pss512 = try key.sign(Self.message, .rsaPSSSHA512)
        let pss512Options = ["-sha512", "-sigopt", "rsa_padding_mode:pss", "-sigopt", "rsa_pss_saltlen:64"]
        #expect(pss512.count == 256)
        #expect(try opensslVerifies(pss512, Self.message, publicKey, pss512Options))
        #expect(try !opensslVerifies(pss512, Self.otherMessage, publicKey, pss512Options))
        #expect(try key.sign(Self.message, .rsaPSSSHA512) != pss512)  // a fresh salt each time
    }

    @Test func anRSAKeyRefusesAnotherKindsAlgorithm() throws {
        let (label, _) = try importKey(Self.rsa)
        let key = try #require(try openKey(label))
        let error = #expect(throws: CryptoError.self) { _ = try key.sign(Self.message, .ecdsaP256SHA256) }
        #expect(error?.description.contains("RSA") == true, "\(String(describing: error))")
        #expect(error?.description.contains("EC P-256") == true, "\(String(describing: error))")
        #expect(throws: CryptoError.self) { _ = try key.sign(Self.message, .ed25519) }
    }

    @Test func anRSAKeyDecryptsWhatOpenSSLEncryptedWithOAEPSHA256() throws {
        let (label, publicKey) = try importKey(Self.rsa)
        let key = try #require(try openKey(label))
        let plaintext = Array("a JWE content key of 32 bytes..".utf8)
        let plaintextFile = try write(plaintext, "plain")
        let ciphertextFile = "\(directory.path)/ciphertext-\(UUID().uuidString.prefix(8))"
        try mustRun(
            Self.openssl,
            [
                "pkeyutl", "-encrypt", "-pubin", "-inkey", publicKey, "-pkeyopt", "rsa_padding_mode:oaep", "-pkeyopt",
                "rsa_oaep_md:sha256", "-pkeyopt", "rsa_mgf1_md:sha256", "-in", plaintextFile, "-out", ciphertextFile,
            ])
        let ciphertext = [UInt8](try Data(contentsOf: URL(fileURLWithPath: ciphertextFile)))
        #expect(ciphertext.count == 256)
        // SoftHSM 2.6 refuses OAEP with SHA-256 at C_DecryptInit: the key decrypts raw on the
        // token and the padding is checked by OpenSSL.
        #expect(try key.decryptOAEPSHA256(ciphertext) == plaintext)
        // A block altered by one bit, or of another size, does not decode.
        var altered = ciphertext
        altered[100] ^= 1
        #expect(throws: CryptoError.self) { try key.decryptOAEPSHA256(altered) }
        #expect(throws: CryptoError.self) { try key.decryptOAEPSHA256(Array(ciphertext.dropLast())) }
    }

    // MARK: EC P-256 and Ed25519

    @Test func anECKeySignsRAndSThatOpenSSLVerifies() throws {
        let (label, publicKey) = try importKey(Self.p256)
        let key = try #require(try openKey(label))
        #expect(key.kind == .ecP256 && key.bits == 0)
        let signature = try key.sign(Self.message, .ecdsaP256SHA256)
        #expect(signature.count == 64)
        #expect(try opensslVerifies(Self.der(signature), Self.message, publicKey, ["-sha256"]))
        #expect(try !opensslVerifies(Self.der(signature), Self.otherMessage, publicKey, ["-sha256"]))

        #expect(throws: CryptoError.self) { _ = try key.sign(Self.message, .rsaPSSSHA256) }
        let error = #expect(throws: CryptoError.self) {
            _ = try key.decryptOAEPSHA256([UInt8](repeating: 1, count: 256))
        }
        #expect(error?.description.contains("EC P-256") == true, "\(String(describing: error))")
    }

    @Test func anEd25519KeySignsTheMessageWholeFromManyThreads() throws {
        let (label, publicKey) = try importKey(["-algorithm", "ED25519"])
        let key = try #require(try openKey(label))
        #expect(key.kind == .ed25519 && key.bits == 0)
        let signature = try key.sign(Self.message, .ed25519)
        #expect(signature.count == 64)
        #expect(try opensslVerifiesEd25519(signature, Self.message, publicKey))
        #expect(try !opensslVerifiesEd25519(signature, Self.otherMessage, publicKey))
        #expect(throws: CryptoError.self) { _ = try key.sign(Self.message, .ecdsaP256SHA256) }

        // Ed25519 is deterministic: one session, used by many threads in turn, gives the same bytes.
        let signatures = Mutex<[[UInt8]]>([])
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<10 {
                let made = (try? key.sign(Self.message, .ed25519)) ?? []
                signatures.withLock { $0.append(made) }
            }
        }
        let all = signatures.withLock { $0 }
        #expect(all.count == 80 && all.allSatisfy { $0 == signature })
    }

    // MARK: Finding the key

    @Test func anUnknownLabelIsNil() throws {
        #expect(try openKey("no-such-key-\(UUID().uuidString.prefix(8))") == nil)
    }

    @Test func aKeyOfAnotherCurveIsRefusedByName() throws {
        let (label, _) = try importKey(["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384"])
        let error = #expect(throws: PKCS11Error.self) { _ = try openKey(label) }
        #expect(error?.kind == .failed, "\(String(describing: error))")
        #expect(error?.description.contains(label) == true && error?.description.contains("P-256") == true)
    }

    @Test func twoPrivateKeysOfOneLabelAreRefusedNotGuessed() throws {
        let (label, _) = try importKey(Self.p256)
        _ = try importKey(Self.p256, label: label)
        let error = #expect(throws: PKCS11Error.self) { _ = try openKey(label) }
        #expect(error?.kind == .ambiguousObject, "\(String(describing: error))")
        #expect(error?.description.contains(label) == true)
    }
}
