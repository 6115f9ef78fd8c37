import CloakCrypto

extension Vault {
    /// Keeps audit events made without a vault job of their own (a reveal's, a refusal's, a
    /// token's): chained and committed with the vault's next batch; `completion` once durable.
    /// Without ``Settings/audit`` nothing is kept and `completion` runs at once.
    package func recordAudit(
        _ drafts: [AuditEvent.Draft], completion: @escaping @Sendable (Result<Void, VaultError>) -> Void
    ) {
        guard settings.audit != nil, !drafts.isEmpty else { return completion(.success(())) }
        executor.submit(audit: drafts) { completion(Self.map($0)) }
    }

    /// A page of the audit events that match `query`, newest first (``AuditSearch``).
    package func auditEvents(
        _ query: AuditQuery, completion: @escaping @Sendable (Result<AuditPage, VaultError>) -> Void
    ) {
        let reader = auditReader ?? executor
        let search: @Sendable () -> Void = {
            reader.submit(
                reads: true, { store in try store.auditEvents(query) }, completion: { completion(Self.map($0)) })
        }
        guard hasAuditSegment else { return search() }
        // Reads' newest events are in the segment (AuditSegment): into the store first, for the
        // search's connection to find. Should that fail, they are still durable and searched later.
        executors[0].drainAudit { _ in search() }
    }

    /// Runs a long read (an audit search, a count over every record) on the reader connection
    /// when the vault has one, so that it never holds up the vault thread's commits; on the
    /// vault thread otherwise.
    package func withReader<T: Sendable>(
        _ body: @escaping (any AliasStore) throws -> T, completion: @escaping @Sendable (Result<T, any Error>) -> Void
    ) {
        (auditReader ?? executor).submit(reads: true, body, completion: completion)
    }

    /// Checks every chain in `store` with the ring's audit key (``AuditVerifier``): the number
    /// of events and chains read, or the first break. Pages of 1,000 blocks a chain.
    package static func verifyAudit(
        _ store: any AliasStore, keys: KeyRing, heads: [AuditVerifier.Head] = []
    ) throws -> (events: Int, chains: Int) {
        var verifier = AuditVerifier(key: keys.derivedMAC(purpose: AuditChain.keyPurpose), heads: heads)
        // Serving nodes' reads not copied into the store yet (AuditSegment), in their places.
        var inSegments: [AuditBlock] = []
        for path in store.auditSegmentBase.map(AuditSegment.paths(beside:)) ?? [] {
            inSegments += try AuditSegment.read(path: path).blocks
        }
        var pending = Dictionary(grouping: inSegments, by: \.chain).mapValues {
            $0.sorted { $0.first < $1.first }[...]
        }
        let chains = Set(try store.auditChains()).union(pending.keys).sorted()
        func addPending(_ chain: String, before first: Int64?) throws {
            while let next = pending[chain]?.first, first.map({ next.first <= $0 }) ?? true {
                pending[chain]?.removeFirst()
                // Copied already: the store's row is the one read.
                if next.first == first { continue }
                guard let summary = next.summary else {
                    throw AuditVerifier.Break(
                        chain: chain, seq: next.first, reason: "a block in the audit segment does not decode (altered)")
                }
                try verifier.add(StoredAuditBlock(id: 0, lastAt: summary.lastAt, lastSeq: summary.last, block: next))
            }
        }
        for chain in chains {
            // Every row of the chain, by the place it is stored at (not by what it says it ends at).
            var after = Int64.min
            while true {
                let page = try store.auditChain(chain, after: after, limit: 1000)
                for block in page {
                    try addPending(chain, before: block.block.first)
                    try verifier.add(block)
                    let keys = AuditBlockBody.aliasReferenceKeys(block.block.body) ?? []
                    guard try store.auditAliasIndexHolds(block, keys: keys) else {
                        throw AuditVerifier.Break(
                            chain: chain, seq: block.block.first,
                            reason: "the alias index does not find it by its references (hidden from alias searches)")
                    }
                }
                guard let last = page.last?.block.first, page.count == 1000 else { break }
                after = last
            }
            try addPending(chain, before: nil)
        }
        // The logged heads first: a chain cut off at its end is named by its own head, never
        // by what its deletion did to the store's index (review V, item 6).
        try verifier.finish()
        if let problem = try store.auditIndexProblem() {
            throw AuditVerifier.Break(chain: "(the alias index)", seq: 0, reason: problem)
        }
        return (verifier.events, chains.count)
    }
}
