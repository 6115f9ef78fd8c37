import CloakCore
import CloakCrypto
import CloakService
import CloakTesting
import CloakVault
import Foundation
import Testing

/// The wrapping key on a PKCS#11 token: SoftHSM, a token initialised by the test, Cloak talking
/// to it through the module's C interface.
@Suite(.serialized, .enabled(if: SoftHSM.isAvailable, "needs softhsm2 (scripts/install-deps)"))
struct HSMKeyCustodyTests {
    let hsm = SoftHSM.shared
    let directory = TemporaryDirectory()

    /// A URI for a new object on token `index` (its PIN in a file), and the PIN.
    func uri(token index: Int = 0, object: String = "kek-\(UUID().uuidString.prefix(8))", pin: String? = nil)
        throws -> String
    {
        let token = SoftHSM.tokens[index]
        let file = "\(directory.path)/pin-\(UUID().uuidString.prefix(6))"
        try SoftHSM.writePIN(pin ?? token.pin, to: file)
        return hsm.uri(token: token.label, object: object, pinFile: file)
    }

    func settings(keys: String, store: String? = nil) -> ServiceConfiguration.VaultSettings {
        var settings = ServiceConfiguration.VaultSettings()
        settings.store = store ?? "sqlite:\(directory.path)/cloak-\(UUID().uuidString.prefix(6)).db"
        settings.keys = keys
        return settings
    }

    func admin(_ settings: ServiceConfiguration.VaultSettings) throws -> KeyAdministration {
        KeyAdministration(
            settings: settings, environment: [:], store: try VaultBootstrap.store(settings), user: "tester")
    }

    @Test func theTokensKeySealsAndOpensAndNeverLeavesIt() throws {
        let uri = try PKCS11URI(parsing: try uri())
        let pin = try uri.pin(environment: [:])
        #expect(try PKCS11Key.open(uri, pin: pin) == nil)
        let made = try PKCS11Key.create(uri, pin: pin)
        let key = try #require(try PKCS11Key.open(uri, pin: pin))
        let sealed = try made.seal(Array("a data key".utf8), associatedData: Array("ctx".utf8))
        #expect(try key.open(sealed, associatedData: Array("ctx".utf8)) == Array("a data key".utf8))
        #expect(sealed.count == 12 + 10 + 16)
        #expect(throws: PKCS11Error.self) { try key.open(sealed, associatedData: Array("other".utf8)) }
        var altered = sealed
        altered[14] ^= 1
        #expect(throws: PKCS11Error.self) { try key.open(altered, associatedData: Array("ctx".utf8)) }
        #expect(!key.isExtractable)
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/pkcs11-tool"), "needs opensc"))
    func aKeyMadeExtractableElsewhereIsSeenAsSuch() throws {
        // Made by OpenSC's pkcs11-tool as an operator might, with CKA_EXTRACTABLE set.
        let label = "loose-\(UUID().uuidString.prefix(8))"
        let tool = Process()
        tool.executableURL = URL(fileURLWithPath: "/usr/bin/pkcs11-tool")
        tool.arguments = [
            "--module", SoftHSM.module, "--token-label", SoftHSM.tokens[0].label, "--login", "--pin",
            SoftHSM.tokens[0].pin, "--keygen", "--key-type", "AES:32", "--label", label, "--extractable",
        ]
        tool.environment = ProcessInfo.processInfo.environment.merging(hsm.environment) { _, new in new }
        tool.standardOutput = FileHandle.nullDevice
        tool.standardError = FileHandle.nullDevice
        try tool.run()
        tool.waitUntilExit()
        #expect(tool.terminationStatus == 0)
        let uri = try PKCS11URI(parsing: try uri(object: label))
        let key = try #require(try PKCS11Key.open(uri, pin: try uri.pin(environment: [:])))
        #expect(key.isExtractable)
    }

    @Test func twoKeysOfOneLabelAreRefusedNotGuessed() throws {
        let uri = try PKCS11URI(parsing: try uri())
        let pin = try uri.pin(environment: [:])
        _ = try PKCS11Key.create(uri, pin: pin)
        _ = try PKCS11Key.create(uri, pin: pin)  // as a second `softhsm2-util --import` might
        let error = #expect(throws: PKCS11Error.self) { _ = try PKCS11Key.open(uri, pin: pin) }
        #expect(error?.kind == .ambiguousObject, "\(String(describing: error))")
        #expect(error?.description.contains(uri.objectLabel) == true)
    }

    @Test func aWrongPINAnotherTokenOrAMissingModuleAreTold() throws {
        let good = try PKCS11URI(parsing: try uri())
        _ = try PKCS11Key.create(good, pin: try good.pin(environment: [:]))
        let wrong = try PKCS11URI(parsing: try uri(pin: "0000-zz"))
        let error = #expect(throws: PKCS11Error.self) {
            _ = try PKCS11Key.open(wrong, pin: try wrong.pin(environment: [:]))
        }
        #expect(error?.kind == .wrongPIN && error?.description.contains("0000-zz") == false)
        let other = try PKCS11URI(
            parsing: "pkcs11:token=no-such-token;object=x?module-path=\(SoftHSM.module)&pin-source=env:P")
        #expect(throws: PKCS11Error(.tokenNotFound, "no token labelled \"no-such-token\" in \(SoftHSM.module)")) {
            _ = try PKCS11Key.open(other, pin: Array("1".utf8))
        }
        let missing = try PKCS11URI(parsing: "pkcs11:token=t;object=x?module-path=/nonexistent/p11.so&pin-source=env:P")
        #expect(throws: PKCS11Error(.moduleUnloadable, "cannot load the PKCS#11 module /nonexistent/p11.so")) {
            _ = try PKCS11Key.open(missing, pin: Array("1".utf8))
        }
    }

    @Test func keysInitMakesTheObjectOnceThenTheVaultServesFromIt() throws {
        let settings = settings(keys: try uri())
        let first = try admin(settings).initialize()
        #expect(first[0].hasPrefix("made a non-extractable AES-256 key on the token"), "\(first)")
        #expect(first[1].hasPrefix("made a new key ring in the store"))
        let again = try admin(settings).initialize()
        #expect(again[0].hasPrefix("reusing the AES key object"), "\(again)")
        let status = try admin(settings).status()
        #expect(status.wrapping == "pkcs11" && status.current == "k1")
        let vault = try VaultBootstrap.open(settings, environment: [:], logger: nil)
        defer { vault.close() }
        let aliases = try KeyRotationTests.store(vault, count: 3)
        #expect(try KeyRotationTests.reveal(vault, aliases).allSatisfy { $0.hasPrefix("4111") })
    }

    @Test func serveNeverMakesTheObject() throws {
        let settings = settings(keys: try uri())
        let error = #expect(throws: (any Error).self) {
            _ = try VaultBootstrap.open(settings, environment: [:], logger: nil)
        }
        #expect("\(error!)".contains("cloak keys init"))
    }

    @Test func migrateMovesAFileVaultUnderTheTokenOnceAndNothingChangesOnFailure() throws {
        let fileSettings = settings(keys: "file:\(directory.path)/keys-\(UUID().uuidString.prefix(6)).json")
        var vault = try VaultBootstrap.open(fileSettings, environment: [:], logger: nil)
        let aliases = try KeyRotationTests.store(vault, count: 4)
        vault.close()
        let target = try uri()
        let hsmSettings = settings(keys: target, store: fileSettings.store)
        // The object does not exist yet: nothing changes.
        let before = try VaultBootstrap.store(fileSettings).metadata(Vault.keyRingName)
        #expect(throws: (any Error).self) { _ = try admin(fileSettings).migrate(to: target) }
        let made = try admin(hsmSettings).initialize()
        #expect(made.last?.contains("cloak keys migrate") == true, "\(made)")
        // A wrong PIN: nothing changes.
        let wrongPIN = try uri(object: String(target.split(separator: ";")[1].dropFirst(7).prefix(12)), pin: "9999-x")
        #expect(throws: (any Error).self) { _ = try admin(fileSettings).migrate(to: wrongPIN) }
        #expect(try VaultBootstrap.store(fileSettings).metadata(Vault.keyRingName) == before)
        let moved = try admin(fileSettings).migrate(to: target)
        #expect(moved.audit?.contains(#""action":"keys.migrate""#) == true)
        #expect(moved.lines.contains { $0.contains("remove") && $0.contains("keys-") })
        let second = try admin(fileSettings).migrate(to: target)
        #expect(second.audit == nil && second.lines[0].contains("nothing to do"))
        vault = try VaultBootstrap.open(hsmSettings, environment: [:], logger: nil)
        #expect(try KeyRotationTests.reveal(vault, aliases).allSatisfy { $0.hasPrefix("4111") })
        vault.close()
        // The old key file no longer opens the store's ring.
        let error = #expect(throws: (any Error).self) {
            _ = try VaultBootstrap.open(fileSettings, environment: [:], logger: nil)
        }
        #expect("\(error!)".contains("wrapped by a pkcs11 key"))
    }
}
