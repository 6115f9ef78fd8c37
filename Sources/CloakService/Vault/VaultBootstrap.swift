import CloakCrypto
import CloakVault
import Foundation
import Logging

/// Opens the vault the configuration names: its key ring and its store.
package enum VaultBootstrap {
    package struct Error: Swift.Error, CustomStringConvertible {
        package let description: String
    }

    /// The key ring the configuration's `vault.keys` opens on `store` (``KeyCustody``): the
    /// store's wrapped ring, or a vault's from before; on a new machine (an empty store, no key
    /// file) a new one. A store that holds records never gets a new ring.
    package static func keys(
        _ settings: ServiceConfiguration.VaultSettings, environment: [String: String],
        logger: Logger?, store: any AliasStore, firstRun: Bool = true
    ) throws -> KeyCustody.Opened {
        do {
            let source = try KeySource.effective(settings.keys, environment: environment)
            if case .env("CLOAK_MASTER_KEY") = source, settings.keys.hasPrefix("file:") {
                logger?.info("using the key ring derived from CLOAK_MASTER_KEY")
            }
            return try KeyCustody.open(
                source, environment: environment, store: store, firstRun: firstRun, logger: logger)
        } catch let error as StoreError {
            throw error
        } catch {
            throw Error(description: "\(error)")
        }
    }

    /// The store `vault.store` names.
    package static func store(_ settings: ServiceConfiguration.VaultSettings) throws -> any AliasStore {
        try store(url: settings.store)
    }

    /// The store a `vault.store` value names (``StoreURL``), refused as the bootstrap's error.
    package static func store(url: String) throws -> any AliasStore {
        do { return try StoreURL.open(url) } catch let unknown as StoreURL.Unknown {
            throw Error(description: unknown.description)
        }
    }

    package static func open(
        _ settings: ServiceConfiguration.VaultSettings, environment: [String: String], logger: Logger?,
        audit: AuditSettings? = nil
    )
        throws -> Vault
    {
        try openWithKeys(settings, environment: environment, logger: logger, audit: audit).vault
    }

    /// How a serving node keeps audit events: chains named after `node`, `audit.retention_days`,
    /// each chain's head logged (`audit head`: chain, seq, mac) each second it moved and at stop,
    /// for `cloak audit verify --heads`.
    package static func auditSettings(
        _ configuration: ServiceConfiguration, node: String, logger: Logger?
    ) -> AuditSettings {
        var settings = AuditSettings(node: node, retentionDays: configuration.auditRetentionDays) { head in
            logger?.info(
                "audit head",
                metadata: [
                    "chain": .string(head.chain), "seq": .stringConvertible(head.seq),
                    "mac": .string(head.mac.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()),
                ])
        }
        // What the start found in the reads' segment: blocks a stop left, a torn record cut.
        settings.log = { message in logger?.warning("\(message)") }
        return settings
    }

    /// Opens the vault, and what refreshes its ring from the store (start it with the service).
    package static func openWithKeys(
        _ settings: ServiceConfiguration.VaultSettings, environment: [String: String], logger: Logger?,
        audit: AuditSettings? = nil
    )
        throws -> (vault: Vault, refresh: KeyRefresh)
    {
        let store = try store(settings)
        let opened = try keys(settings, environment: environment, logger: logger, store: store)
        let keys = opened.ring
        // A shared store takes several connections, each with its own vault thread: one thread's
        // round trips to the server no longer bound the whole node. A store this process alone
        // writes (SQLite) lets the vault remember stored values' aliases (10,000 records:
        // fingerprints, times and aliases); the vault itself refuses to for a shared one.
        var stores = [store]
        if !store.isSoleWriter {
            for _ in 1..<max(1, settings.connections) { stores.append(try self.store(settings)) }
        }
        var vaultSettings = Vault.Settings(
            environment: settings.environment, volatileTTLSeconds: settings.volatileTTLSeconds,
            maxBatch: settings.maxBatch,
            dedupeCacheEntries: 10_000, intentTTLSeconds: settings.intentTTLSeconds,
            maxBucketShare: settings.maxBucketShare)
        // A shared store is a server that can go away (a failover): a call it does not answer in
        // time is a 503, never a hung request. An embedded file store has no such wait.
        if !store.isSoleWriter { vaultSettings.storeTimeoutMilliseconds = settings.storeTimeoutMilliseconds }
        vaultSettings.audit = audit
        // A serving node searches its audit events on a connection of its own.
        let reader = audit == nil ? nil : try self.store(settings)
        let vault = try Vault(stores: stores, keys: keys, settings: vaultSettings, auditReader: reader)
        return (
            vault,
            KeyRefresh(
                vault: vault, wrapping: opened.wrapping, stored: opened.stored,
                interval: settings.keyRefreshSeconds, logger: logger)
        )
    }
}
