import CloakCrypto
import CloakVault
import Foundation
import Logging

/// How the vault's data keys are kept: wrapped by the key ``KeySource`` names and stored in the
/// store (``Vault/keyRingName``), so every node of a cluster reads the same ring and needs only
/// the wrapping key (a key file, a master key in the environment, or a token and its PIN).
///
/// Vaults made before keep opening unchanged: a version 1 key file holds the ring in clear and a
/// master key derives one; that ring is used until the first `cloak keys rotate` (or `migrate`)
/// stores it, wrapped, in the store.
package enum KeyCustody {
    package struct Error: Swift.Error, CustomStringConvertible {
        package let description: String
        init(_ description: String) { self.description = description }
    }

    /// A source's wrapping key, and the ring of a vault made before the ring moved into the store.
    package struct Wrapping: Sendable {
        package let key: any KeyWrapping
        package let legacyRing: KeyRing?
    }

    /// The ring a vault opens with, what wraps it, and the stored bytes it came from (nil: a
    /// legacy ring not stored yet, or one just made).
    package struct Opened: Sendable {
        package let ring: KeyRing
        package let wrapping: any KeyWrapping
        package let stored: [UInt8]?
    }

    /// Opens the wrapping key `source` names; nil when it does not exist yet (no key file, no
    /// object of that label on the token).
    package static func wrapping(_ source: KeySource, environment: [String: String]) throws -> Wrapping? {
        switch source {
        case let .file(path):
            guard FileManager.default.fileExists(atPath: path) else { return nil }
            switch try WrappingKeyFile.load(path: path) {
            case let .wrappingKey(key):
                return Wrapping(key: SoftwareKeyWrapping(kind: "file", location: path, key: key), legacyRing: nil)
            case let .ring(ring):
                return Wrapping(
                    key: SoftwareKeyWrapping(kind: "file", location: path, key: ring.fileWrappingKey), legacyRing: ring)
            }
        case let .env(name):
            guard let text = environment[name], !text.isEmpty else {
                throw Error("vault.keys names \(name), which is not set")
            }
            return Wrapping(
                key: SoftwareKeyWrapping(kind: "env", location: name, key: try KeyRing.wrappingKey(fromMaster: text)),
                legacyRing: try KeyRing.derived(fromMaster: text))
        case let .pkcs11(uri):
            return try pkcs11Wrapping(uri, environment: environment, create: false)
        }
    }

    /// The ring the store keeps (unwrapped), else the source's legacy ring. With `firstRun`, a
    /// missing key file is made for an empty store, with a new ring (what `serve` does on a new
    /// machine); a PKCS#11 object is never made here (`cloak keys init` does).
    package static func open(
        _ source: KeySource, environment: [String: String], store: any AliasStore, firstRun: Bool, logger: Logger?
    ) throws -> Opened {
        let stored = try store.metadata(Vault.keyRingName)
        guard let wrapping = try wrapping(source, environment: environment) else {
            guard case let .file(path) = source else {
                throw Error(
                    "vault.keys names a PKCS#11 key that does not exist on the token: run `cloak keys init` to make it")
            }
            let used = try stored != nil || store.hasRecords() || store.metadata("key_check") != nil
            if used {
                throw Error(
                    "the key file \(path) is missing but the store already holds records sealed with another key "
                        + "ring; restore the key file (or set the master key) instead of creating new keys")
            }
            guard firstRun else { throw Error("there is no key file \(path): run `cloak keys init`") }
            let key = SoftwareKeyWrapping(kind: "file", location: path, key: try WrappingKeyFile.create(path: path))
            let ring = try makeRing(wrappedBy: key, in: store)
            logger?.notice(
                "generated new vault keys", metadata: ["path": .string(path), "key_id": .string(ring.currentID)])
            return Opened(ring: ring, wrapping: key, stored: try store.metadata(Vault.keyRingName))
        }
        if let stored { return Opened(ring: try unwrap(stored, wrapping.key), wrapping: wrapping.key, stored: stored) }
        if let legacy = wrapping.legacyRing { return Opened(ring: legacy, wrapping: wrapping.key, stored: nil) }
        guard try !store.hasRecords(), try store.metadata("key_check") == nil else {
            throw Error("the store holds records but no key ring; restore the key file this store was created with")
        }
        guard firstRun else { throw Error("the store holds no key ring yet: run `cloak keys init`") }
        return Opened(ring: try makeRing(wrappedBy: wrapping.key, in: store), wrapping: wrapping.key, stored: nil)
    }

    /// A stored ring opened with `key`; a ring another kind of key wrapped is named.
    package static func unwrap(_ stored: [UInt8], _ key: any KeyWrapping) throws -> KeyRing {
        let (kind, location) = try KeyRing.wrapping(of: stored)
        guard kind == key.kind else {
            throw Error(
                "the store's key ring is wrapped by a \(kind) key (\(location)), but vault.keys names a \(key.kind) "
                    + "key (\(key.location)): set vault.keys to the \(kind) key")
        }
        return try KeyRing.unwrapped(stored, by: key)
    }

    /// A new ring, stored wrapped, for an empty store (refused when another process stored one first).
    package static func makeRing(wrappedBy key: any KeyWrapping, in store: any AliasStore) throws -> KeyRing {
        let ring = KeyRing.generate()
        guard try store.replaceMetadata(Vault.keyRingName, expected: nil, with: try ring.wrapped(by: key)) else {
            throw Error("another process stored a key ring meanwhile; run the command again")
        }
        return ring
    }

    /// Stores `ring` wrapped by `key` in place of `expected` (what was read); false when another
    /// process changed the stored ring meanwhile.
    package static func store(
        _ ring: KeyRing, wrappedBy key: any KeyWrapping, in store: any AliasStore, replacing expected: [UInt8]?
    ) throws -> Bool {
        try store.replaceMetadata(Vault.keyRingName, expected: expected, with: try ring.wrapped(by: key))
    }
}
