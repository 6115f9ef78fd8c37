import CloakService
import CloakTesting
import Foundation
import Testing

/// `vault.keys` and `vault.key_refresh_s` as the configuration reads them (YAML and `CLOAK_*`).
@Suite struct KeySourceConfigurationTests {
    static func issues(keys: String, refresh: String = "30") -> [String] {
        let yaml = TestServer.shippedConfiguration.replacingOccurrences(
            of: #"  keys: "file:data/keys.json""#, with: "  keys: \"\(keys)\"\n  key_refresh_s: \(refresh)")
        do {
            _ = try ServiceConfiguration.parse(yaml: yaml, environment: [:])
            return []
        } catch {
            return error.issues.map(\.description)
        }
    }

    static let module = "module-path=/usr/lib/softhsm/libsofthsm2.so"

    @Test(arguments: [
        "file:data/keys.json", "env:CLOAK_MASTER_KEY",
        "pkcs11:token=cloak;object=kek?\(module)&pin-source=file:data/pin",
        "pkcs11:token=my%20token;object=kek;type=secret-key?\(module)&pin-source=env:HSM_PIN",
    ])
    func goodSourcesParse(keys: String) {
        #expect(Self.issues(keys: keys) == [])
    }

    @Test(arguments: [
        ("file:", "expected file:PATH"),
        ("vault:secret", "expected file:PATH"),
        ("pkcs11:token=cloak;object=kek;pin-value=1234?\(module)&pin-source=env:P", "the PIN must not be in the URI"),
        ("pkcs11:token=cloak;object=kek?\(module)&pin-source=env:P&pin-value=1234", "the PIN must not be in the URI"),
        ("pkcs11:object=kek?\(module)&pin-source=env:P", "must name the token"),
        ("pkcs11:token=cloak?\(module)&pin-source=env:P", "must name the key object"),
        ("pkcs11:token=cloak;object=kek?pin-source=env:P", "module's absolute path"),
        ("pkcs11:token=cloak;object=kek?module-path=libsofthsm2.so&pin-source=env:P", "module's absolute path"),
        ("pkcs11:token=cloak;object=kek?\(module)", "must say where the PIN is"),
        ("pkcs11:token=cloak;object=kek?\(module)&pin-source=http://x", "pin-source must be"),
        ("pkcs11:token=cloak;object=kek;type=private?\(module)&pin-source=env:P", "must be a secret key"),
        ("pkcs11:token=%zz;object=kek?\(module)&pin-source=env:P", "percent escape"),
        ("pkcs11:token=a;token=b;object=kek?\(module)&pin-source=env:P", "given twice"),
    ])
    func malformedSourcesAreIssuesOfVaultKeys(keys: String, says: String) {
        let found = Self.issues(keys: keys)
        #expect(found.count == 1 && found[0].hasPrefix("vault.keys") && found[0].contains(says), "\(found)")
        #expect(!found.joined().contains("1234"))
    }

    @Test func theRefreshIntervalIsBounded() {
        #expect(Self.issues(keys: "file:data/keys.json", refresh: "0").first?.hasPrefix("vault.key_refresh_s") == true)
        #expect(Self.issues(keys: "file:data/keys.json", refresh: "5") == [])
    }
}
