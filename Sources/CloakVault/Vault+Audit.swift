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
        (auditReader ?? executor).submit(
            reads: true, { store in try store.auditEvents(query) }, completion: { completion(Self.map($0)) })
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
        let chains = try store.auditChains()
        for chain in chains {
            // Every row of the chain, by the place it is stored at (not by what it says it ends at).
            var after = Int64.min
            while true {
                let page = try store.auditChain(chain, after: after, limit: 1000)
                for block in page {
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
