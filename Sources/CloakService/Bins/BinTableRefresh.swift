import CloakCore
import CloakCrypto
import CloakHTTP
import CloakVault
import Dispatch
import Foundation
import Logging
import Synchronization

/// Keeps a node's BIN table in step with the store's (``BinTableDocument``): every
/// `bins.refresh_s` it reads the header on a vault thread, and when it names another version,
/// reads that table too; the table is parsed and built on a queue of its own (a large one takes
/// a second), then swapped in whole. A header that does not verify with the ring, or a table
/// whose digest is not the header's, is refused (logged once) and the node keeps the table it
/// has. Every adoption is an audit line (`bins_adopt`: version, rows, source).
package final class BinTableRefresh: Sendable {
    let vault: Vault
    let key: HMACKey
    let logger: Logger
    private let timer: RepeatingTimer
    private let building = DispatchQueue(label: "cloak.bins-build")
    private let state = Mutex<State>(State())
    /// Whether a table was ever adopted: read without the lock, so the requests of a node with
    /// no table (most) take no lock to find that out.
    private let loaded = Atomic<Bool>(false)

    private struct State: Sendable {
        var document: BinTableDocument?
        var table: BinTable?
        /// The table last refused (``BinTableDocument/tableName``: version and digest), so a
        /// refusal is logged once.
        var refused: String?
        /// A reading is under way (a large table takes a second to build): the next tick waits,
        /// so two copies are never read and built at once.
        var reading = false
        /// When the table held was adopted (Unix seconds).
        var adoptedAt: Int64?
        /// The name this node's heartbeat goes under (``BinTableNode``); nil: none written.
        var node: String?
        var status: (@Sendable () -> JSONValue)?
        /// When this node last removed the heartbeats of nodes long gone.
        var prunedAt: Int64?
    }

    /// Writes this node's heartbeat under `node` from now on, after every reading
    /// (`cloak bins status` lists what each node serves).
    /// `status` says what else the heartbeat carries (``BinTableNode/status``).
    package func announce(as node: String, status: (@Sendable () -> JSONValue)? = nil) {
        state.withLock {
            $0.node = node
            $0.status = status
        }
    }

    /// The name this node's heartbeat goes under (nil until ``announce(as:status:)``).
    package var node: String? { state.withLock { $0.node } }

    package init(vault: Vault, interval: Int, logger: Logger) {
        self.vault = vault
        self.key = vault.derivedMAC(purpose: BinTableDocument.purpose)
        self.logger = logger
        self.timer = RepeatingTimer(label: "cloak.bins-refresh", interval: interval)
    }

    /// The table this node serves, and its header (nil: none imported, or none verified yet).
    package var current: (table: BinTable, document: BinTableDocument)? {
        guard loaded.load(ordering: .acquiring) else { return nil }
        return state.withLock { s in s.table.flatMap { table in s.document.map { (table, $0) } } }
    }

    package func start() { timer.start { [weak self] in self?.refreshNow() } }
    package func stop() { timer.stop() }
    deinit { stop() }

    /// Reads the store once and adopts a new table that verifies; `done` runs after.
    package func refreshNow(done: (@Sendable () -> Void)? = nil) {
        let (held, busy) = state.withLock { s -> (BinTableDocument?, Bool) in
            defer { s.reading = true }
            return (s.document, s.reading)
        }
        guard !busy else {
            done?()
            return
        }
        let key = self.key
        let refused = state.withLock { $0.refused }
        vault.withStore(reads: true) { store -> (BinTableDocument, [UInt8]?)? in
            // A table is named by its version and digest: after a restore or a failover, an import
            // may reuse a version this node serves with another table (issue 55, item 6).
            guard let bytes = try store.metadata(BinTableDocument.pointerName), !bytes.isEmpty,
                let document = BinTableDocument(stored: bytes), document.tableName != held?.tableName,
                document.tableName != refused
            else { return nil }
            // A header is checked before its table is read: a database writer without the ring
            // cannot make nodes read a table of its choosing (of any size), nor go back to an
            // older one (a version below the one held is a replay).
            guard document.verifies(key), document.version >= (held?.version ?? 0),
                document.version != held?.version || document.importedAt > held?.importedAt ?? 0
            else { return (document, nil) }
            return (document, try store.metadata(document.tableName))
        } completion: { [self] result in
            building.async { [self] in
                switch result {
                case .success(let found?): consider(found.0, found.1)
                case .success(nil): break
                case .failure(let error):
                    logger.warning(
                        "cannot read the store's BIN table; keeping the current one",
                        metadata: ["reason": .string("\(error)")])
                }
                let (beat, status) = state.withLock { s -> (BinTableNode?, (@Sendable () -> JSONValue)?) in
                    s.reading = false
                    let beat = s.node.map {
                        BinTableNode(
                            node: $0, version: s.document?.version, sha256: s.document?.shortDigest,
                            adoptedAt: s.adoptedAt, seenAt: Int64(Date().timeIntervalSince1970))
                    }
                    return (beat, s.status)
                }
                // Outside the lock: the status reads the service's own counters.
                var beatWithStatus = beat
                beatWithStatus?.status = status?()
                guard let beat = beatWithStatus else {
                    done?()
                    return
                }
                let prune = state.withLock { s -> Bool in
                    guard beat.seenAt - (s.prunedAt ?? 0) >= BinTableNode.pruneEverySeconds else { return false }
                    s.prunedAt = beat.seenAt
                    return true
                }
                vault.withStore(reads: false) { store in
                    try store.setMetadata(BinTableNode.prefix + beat.node, beat.stored)
                    // Nodes gone for a week (a replaced pod's name) leave the listing, once an hour.
                    if prune { try BinTableNode.prune(store, before: beat.seenAt - BinTableNode.forgetAfterSeconds) }
                } completion: { _ in
                    done?()
                }
            }
        }
    }

    /// Refreshes and waits (at start, before listening).
    package func refreshAndWait() {
        ThreadWait<Void>.answer { done in refreshNow { done(()) } }
    }

    private func consider(_ document: BinTableDocument, _ content: [UInt8]?) {
        let refusal: String?
        var built: BinTable?
        if !document.verifies(key) {
            refusal = "its header does not verify with the key ring (written without the ring, or by another)"
        } else if let held = state.withLock({ $0.document }), document.version < held.version {
            refusal = "its version is below the one this node serves (an older table put back)"
        } else if let held = state.withLock({ $0.document }), document.version == held.version,
            document.importedAt <= held.importedAt
        {
            // Two signed tables under one version exist only after a restore and an import: the
            // later import is followed, never the other way, so a writer keeping both cannot
            // switch nodes between them.
            refusal = "another table under the version this node serves, imported no later than it"
        } else if let content, !content.isEmpty, constantTimeEquals(Digest.sha256(content), document.digest) {
            if let decoded = BinTableReader.Table(decoding: content) {
                built = BinTable(decoded)
                refusal = nil
            } else {
                refusal = "it does not read as a BIN table"
            }
        } else {
            refusal = "its content is missing or is not what its header names"
        }
        guard let built else {
            let first = state.withLock { s in
                defer { s.refused = document.tableName }
                return s.refused != document.tableName
            }
            if first {
                logger.error(
                    "the store's BIN table is refused; keeping the current one (run cloak bins import again)",
                    metadata: [
                        "version": .stringConvertible(document.version), "sha256": .string(document.shortDigest),
                        "reason": .string(refusal ?? ""),
                    ])
            }
            return
        }
        if let held = state.withLock({ $0.document }), held.version == document.version {
            // Signed with the ring, so an import's: one made after a restore or failover that
            // numbered from an older header. The store's table is followed, and said so.
            logger.warning(
                "the store's BIN table has the version this node serves with another digest (an import after a restore or failover); adopting the store's",
                metadata: [
                    "version": .stringConvertible(document.version), "sha256": .string(document.shortDigest),
                    "previous_sha256": .string(held.shortDigest),
                ])
        }
        state.withLock { s in
            s.document = document
            s.table = built
            s.refused = nil
            s.adoptedAt = Int64(Date().timeIntervalSince1970)
        }
        loaded.store(true, ordering: .releasing)
        // The read and the build freed several times the table's size: give it back.
        ProcessMemory.releaseFreed()
        AuditLog(logger: logger, vault: vault).record(
            AuditEvent.Draft(
                made: .binsAdopt, tokenID: "-", client: "-", aliasReference: nil, result: .ok,
                facts: [
                    ("version", String(document.version)), ("sha256", document.shortDigest),
                    ("rows", String(document.rows)), ("source", document.source),
                ]))
    }
}
