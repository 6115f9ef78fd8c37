import CloakCore
import CloakCrypto
import CloakVault
import Foundation

extension KeyAdministration {
    /// `cloak keys init`: makes the wrapping key the configuration names when it does not exist
    /// (a key file; an AES key on the token, or reuses one of that label, saying so), then a new
    /// key ring in the store, only for an empty store. Returns what it did, a line each.
    package func initialize() throws -> [String] {
        let source = try source()
        var lines: [String] = []
        let storeIsEmpty =
            try store.metadata(Vault.keyRingName) == nil && !store.hasRecords()
            && store.metadata("key_check") == nil
        let wrapping: any KeyWrapping
        switch source {
        case let .file(path):
            if FileManager.default.fileExists(atPath: path) {
                throw Failure("\(path) already exists; refusing to overwrite keys")
            }
            guard storeIsEmpty else {
                throw Failure(
                    "the store already holds records or a key ring made with another key file; restore that "
                        + "file instead of making a new one")
            }
            wrapping = SoftwareKeyWrapping(kind: "file", location: path, key: try WrappingKeyFile.create(path: path))
            lines.append("wrote \(path): the wrapping key (mode 0600); back it up apart from the database")
        case let .env(name):
            guard let opened = try KeyCustody.wrapping(source, environment: environment) else {
                throw Failure("vault.keys names \(name), which is not set")
            }
            wrapping = opened.key
            lines.append("the wrapping key is the master key in \(name): nothing to write")
        case let .pkcs11(uri):
            if let existing = try KeyCustody.pkcs11Wrapping(uri, environment: environment, create: false) {
                wrapping = existing.key
                lines.append("reusing the AES key object already on the token (\(wrapping.location))")
            } else {
                guard let made = try KeyCustody.pkcs11Wrapping(uri, environment: environment, create: true) else {
                    throw Failure("the token did not make the key")
                }
                wrapping = made.key
                lines.append("made a non-extractable AES-256 key on the token (\(wrapping.location))")
            }
        }
        if storeIsEmpty {
            let ring = try KeyCustody.makeRing(wrappedBy: wrapping, in: store)
            lines.append("made a new key ring in the store, wrapped by it (current key \(ring.currentID))")
        } else if let stored = try store.metadata(Vault.keyRingName),
            (try? KeyRing.wrapping(of: stored).kind) == wrapping.kind
        {
            lines.append("the store already holds its key ring: kept")
        } else if case .pkcs11 = source {
            lines.append(
                "the store's keys are wrapped by another key: move them under the token with "
                    + "`cloak keys migrate --to <this URI>`, run with the vault's current configuration")
        } else {
            lines.append("the store already holds its keys: kept")
        }
        return lines
    }

    /// `cloak keys migrate --to pkcs11:…`: wraps the ring the configuration opens under the
    /// token's key (which must exist), checks that the token opens it back to the same ring, and
    /// replaces the stored ring. A second run is a no-op.
    package func migrate(to uri: String) throws -> (lines: [String], audit: String?) {
        let target: KeySource
        do { target = try KeySource(uri) } catch { throw Failure(error.description) }
        guard case .pkcs11 = target else { throw Failure("--to must be a pkcs11: URI") }
        guard let hsm = try KeyCustody.wrapping(target, environment: environment) else {
            throw Failure(
                "the token has no key object of that label: run `cloak keys init` with a configuration whose "
                    + "vault.keys is the URI, then migrate")
        }
        if let stored = try store.metadata(Vault.keyRingName) {
            let (kind, location) = try KeyRing.wrapping(of: stored)
            if kind == "pkcs11" && location == hsm.key.location {
                _ = try KeyRing.unwrapped(stored, by: hsm.key)
                return (["the key ring is already wrapped by the token's key (\(location)): nothing to do"], nil)
            }
        }
        let opened = try open()
        let wrapped = try opened.ring.wrapped(by: hsm.key)
        let back = try KeyRing.unwrapped(wrapped, by: hsm.key)
        guard back.checkValue == opened.ring.checkValue, back.keys.map(\.id) == opened.ring.keys.map(\.id),
            zip(back.keys, opened.ring.keys).allSatisfy({ $0.encryptionKey == $1.encryptionKey })
        else {
            throw Failure("the token did not give back the ring it wrapped; nothing changed")
        }
        guard try store.replaceMetadata(Vault.keyRingName, expected: opened.stored, with: wrapped) else {
            throw Failure("another process changed the key ring meanwhile; nothing changed; run the command again")
        }
        let audit = try record(
            .keysMigrate, ring: opened.ring,
            [
                ("from", .string(opened.wrapping.kind)), ("to", .string("pkcs11")),
                ("location", .string(hsm.key.location)),
                ("versions", .string(opened.ring.keys.map(\.id).joined(separator: ","))),
            ])
        var lines = [
            "moved the key ring (\(opened.ring.keys.map(\.id).joined(separator: ", "))) under the token's key "
                + "(\(hsm.key.location)); the key-check value matches",
            "set vault.keys to the pkcs11: URI on every node, and restart them",
        ]
        switch opened.wrapping.kind {
        case "file":
            lines.append(
                "then remove \(opened.wrapping.location) and its backups: it holds the key that wrapped the ring before"
            )
        case "env": lines.append("then unset \(opened.wrapping.location) wherever it is set")
        default: break
        }
        return (lines, audit)
    }
}
