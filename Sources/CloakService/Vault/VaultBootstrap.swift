import CloakCrypto
import CloakVault
import Foundation
import Logging

/// Opens the vault the configuration names: its key ring and its store.
package enum VaultBootstrap {
    package struct Error: Swift.Error, CustomStringConvertible {
        package let description: String
    }

    /// Resolves the key ring: `CLOAK_MASTER_KEY` (or the variable `vault.keys: env:NAME` names)
    /// when set; otherwise the key file, created with a new key only for an empty store. A store
    /// that already holds records (or a key-check value) never gets a new ring: the key file is
    /// missing, and making another would lose every record sealed in the meantime.
    package static func keyRing(
        _ settings: ServiceConfiguration.VaultSettings, environment: [String: String],
        logger: Logger?, store: any AliasStore
    ) throws -> KeyRing {
        if settings.keys.hasPrefix("env:") {
            let name = String(settings.keys.dropFirst(4))
            guard let text = environment[name] else {
                throw Error(description: "vault.keys names \(name), which is not set")
            }
            return try KeyRing.derived(fromMaster: text)
        }
        if let text = environment["CLOAK_MASTER_KEY"], !text.isEmpty {
            logger?.info("using the key ring derived from CLOAK_MASTER_KEY")
            return try KeyRing.derived(fromMaster: text)
        }
        let path = String(settings.keys.dropFirst("file:".count))
        if FileManager.default.fileExists(atPath: path) { return try KeyRing.load(path: path) }
        if try store.hasRecords() || store.metadata("key_check") != nil {
            throw Error(
                description: "the key file \(path) is missing but the store already holds records sealed with "
                    + "another key ring; restore the key file (or set the master key) instead of creating new keys")
        }
        let ring = KeyRing.generate()
        try ring.write(path: path, replace: false)
        logger?.notice(
            "generated new vault keys", metadata: ["path": .string(path), "key_id": .string(ring.currentID)])
        return ring
    }

    /// The store `vault.store` names.
    package static func store(_ settings: ServiceConfiguration.VaultSettings) throws -> any AliasStore {
        try store(url: settings.store)
    }

    /// The store a `vault.store` value names: `sqlite:PATH` or `postgres://…`.
    ///
    /// A PostgreSQL URL is parsed here (``PostgresURL``) before libpq sees anything; a URL that
    /// does not parse, or names no store, is refused with a message that quotes none of it (it
    /// may hold a password).
    package static func store(url: String) throws -> any AliasStore {
        if url.hasPrefix("sqlite:") {
            return try SQLiteAliasStore(path: String(url.dropFirst("sqlite:".count)))
        }
        if url.hasPrefix("postgres://") || url.hasPrefix("postgresql://") {
            return try PostgreSQLAliasStore(url: PostgresURL(parsing: url))
        }
        throw Error(description: "the store URL must be sqlite:PATH, postgres://… or postgresql://…")
    }

    package static func open(
        _ settings: ServiceConfiguration.VaultSettings, environment: [String: String], logger: Logger?
    )
        throws -> Vault
    {
        let store = try store(settings)
        let keys = try keyRing(settings, environment: environment, logger: logger, store: store)
        // A shared store takes several connections, each with its own vault thread: one thread's
        // round trips to the server no longer bound the whole node. A store this process alone
        // writes (SQLite) lets the vault remember stored values' aliases (10,000 records:
        // fingerprints, times and aliases); the vault itself refuses to for a shared one.
        var stores = [store]
        if !store.isSoleWriter {
            for _ in 1..<max(1, settings.connections) { stores.append(try self.store(settings)) }
        }
        return try Vault(
            stores: stores, keys: keys,
            settings: .init(
                environment: settings.environment, volatileTTLSeconds: settings.volatileTTLSeconds,
                maxBatch: settings.maxBatch,
                dedupeCacheEntries: 10_000, intentTTLSeconds: settings.intentTTLSeconds,
                maxBucketShare: settings.maxBucketShare))
    }
}
