import CloakCore
import CloakCrypto
import CloakVault

/// What one node says it serves (`cloak bins status`): a heartbeat each node writes to the store
/// every `bins.refresh_s` under `nodes.<node>` (its host name and port, so a restarted node keeps
/// its row). A hint for operators, never trusted for anything else: anyone who can write to the
/// database can write it.
package struct BinTableNode: Sendable, Equatable {
    package var node: String
    /// The table it serves (nil: none).
    package var version: Int64?
    package var sha256: String?
    /// When it adopted that table, and when it last wrote this (Unix seconds).
    package var adoptedAt: Int64?
    package var seenAt: Int64
    /// What the node says of itself besides its table (version, uptime, readiness, keys, store,
    /// request counts: ``CloakService/nodeStatus()``); nil from a node that writes none.
    package var status: JSONValue?

    package static let prefix = "nodes."
    /// A heartbeat older than this is a node that is gone (a replaced pod): removed.
    static let forgetAfterSeconds: Int64 = 7 * 86_400
    static let pruneEverySeconds: Int64 = 3_600

    /// Removes the heartbeats last written before `before` (bounded by the nodes that ran in a
    /// week, plus those gone since the last pruning).
    static func prune(_ store: any AliasStore, before: Int64) throws {
        for name in try store.metadataNames(prefix: prefix) {
            guard let bytes = try store.metadata(name), let node = BinTableNode(stored: bytes) else {
                _ = try store.deleteMetadata(name)
                continue
            }
            if node.seenAt < before { _ = try store.deleteMetadata(name) }
        }
    }

    package init(
        node: String, version: Int64?, sha256: String?, adoptedAt: Int64?, seenAt: Int64, status: JSONValue? = nil
    ) {
        self.status = status
        self.node = node
        self.version = version
        self.sha256 = sha256
        self.adoptedAt = adoptedAt
        self.seenAt = seenAt
    }

    var stored: [UInt8] {
        var members: [(key: String, value: JSONValue)] = [("node", .string(node)), ("seen_at", .int(Int(seenAt)))]
        if let version { members.append(("version", .int(Int(version)))) }
        if let sha256 { members.append(("sha256", .string(sha256))) }
        if let adoptedAt { members.append(("adopted_at", .int(Int(adoptedAt)))) }
        if let status { members.append(("status", status)) }
        return JSONWriter.encode(.object(members))
    }

    init?(stored: [UInt8]) {
        guard let value = try? JSONParser().parse(stored), case let .string(node)? = value["node"],
            case let .number(seen)? = value["seen_at"], let seenAt = Int64(seen)
        else { return nil }
        self.node = node
        self.seenAt = seenAt
        if case let .number(v)? = value["version"] { version = Int64(v) }
        if case let .string(d)? = value["sha256"] { sha256 = d }
        if case let .number(a)? = value["adopted_at"] { adoptedAt = Int64(a) }
        status = Self.status(value["status"])
    }

    /// What a heartbeat's `status` may hold, as the node wrote it (unchecked: anyone who can
    /// write to the database can write it, so only these members, as scalars or short lists of
    /// short strings, are kept; anything else is dropped).
    static let statusMembers: Set<String> = [
        "version", "started_at", "uptime_s", "ready", "draining", "store", "keys", "bins", "requests",
        "client_errors", "server_errors",
    ]

    static func status(_ value: JSONValue?) -> JSONValue? {
        guard case let .object(members)? = value else { return nil }
        func small(_ v: JSONValue, depth: Int = 0) -> Bool {
            switch v {
            case let .string(s): return s.utf8.count <= 128
            case .number, .bool, .null: return true
            case let .array(items):
                return depth < 2 && items.count <= 16 && items.allSatisfy { small($0, depth: depth + 1) }
            case let .object(inner):
                return depth < 1 && inner.count <= 4
                    && inner.allSatisfy { $0.key.utf8.count <= 32 && small($0.value, depth: depth + 1) }
            }
        }
        let kept = members.filter { statusMembers.contains($0.key) && small($0.value) }
        return kept.isEmpty ? nil : .object(Array(kept.prefix(statusMembers.count)))
    }

    /// The listing's entry: whether it serves the store's table, and whether it was seen lately.
    package func json(now: Int64, current: BinTableDocument?, staleAfter: Int64) -> JSONValue {
        var members: [(key: String, value: JSONValue)] = [("node", .string(node))]
        members.append(("version", version.map { .int(Int($0)) } ?? .null))
        members.append(("sha256", sha256.map { .string($0) } ?? .null))
        members.append(("adopted_at", adoptedAt.map { .string(RevealedRecord.iso8601($0)) } ?? .null))
        members.append(("seen_s_ago", .int(Int(max(0, now - seenAt)))))
        members.append(
            ("current", .bool(current.map { $0.version == version && $0.shortDigest == sha256 } ?? (version == nil))))
        members.append(("stale", .bool(now - seenAt > staleAfter)))
        if let status { members.append(("status", status)) }
        return .object(members)
    }
}

extension BinTableAdministration {
    /// Every node's heartbeat, by name.
    package func nodes() throws(Failure) -> [BinTableNode] {
        do {
            return try store.metadataNames(prefix: BinTableNode.prefix).sorted().compactMap { name in
                try store.metadata(name).flatMap(BinTableNode.init(stored:))
            }
        } catch {
            throw .store("\(error)")
        }
    }

    /// The table before the current one, as kept in the store (its name and rows).
    package func previousTable() throws(Failure) -> (name: String, table: BinTableReader.Table) {
        do {
            guard let bytes = try store.metadata(BinTableDocument.pointerName),
                let current = BinTableDocument(stored: bytes), current.verifies(key)
            else { throw Failure.store("no verified table in the store to go back from") }
            guard let name = current.previousTable, name.hasPrefix(BinTableDocument.tablePrefix),
                let content = try store.metadata(name), !content.isEmpty
            else { throw Failure.store("the store keeps no table before the current one (one import so far)") }
            // Only a table the ring signed for: the pointer and its digest are under the
            // current header's MAC, and the content must be what that digest says.
            guard let digest = current.previousDigest, constantTimeEquals(Digest.sha256(content), digest) else {
                throw Failure.store(
                    "the table before (\(name)) is not one this key ring signed for (imported before rollback "
                        + "existed, or changed in the store): import the table you want instead")
            }
            guard let table = BinTableReader.Table(decoding: content) else {
                throw Failure.store("the table before (\(name)) does not read as a BIN table")
            }
            return (name, table)
        } catch let failure as Failure {
            throw failure
        } catch {
            throw .store("\(error)")
        }
    }

    /// Imports `candidate` again as the next version (nodes never go back to a lower one).
    package func rollback(to candidate: (name: String, table: BinTableReader.Table), now: Int64) throws(Failure)
        -> BinTableDocument
    {
        try importTable(candidate.table, source: "rollback to \(candidate.name)", now: now)
    }
}
