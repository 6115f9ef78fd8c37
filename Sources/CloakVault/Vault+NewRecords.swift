import CloakCore

/// Creating aliases on a store that batches new records (``AliasStore/batchesNewRecords``): every
/// value of a request goes to the store as the record and first alias it would get if new, with
/// the other requests' of the batch, in one commit. Most requests are then answered from that
/// commit alone; the others (a value stored before without an alias in this format, a taken
/// candidate, a value written twice in one batch) go on the ordinary path for what is left.
extension Vault {
    /// Each value's record with its first alias; nil when a value cannot be written so (an
    /// intent that takes a bucket place first, a value without a first candidate): the whole
    /// request takes the ordinary path.
    func newRecordWrites(_ prepared: [PreparedAlias]) -> [NewRecordWrite]? {
        var writes: [NewRecordWrite] = []
        writes.reserveCapacity(prepared.count)
        for item in prepared {
            guard item.newRecord.bucket == nil, case let .success(text) = item.firstCandidate,
                let mac = item.firstCandidateMAC
            else { return nil }
            let alias = IssuedAlias(
                alias: text, format: item.request.format, luhnValid: item.request.luhnValid, mac: mac)
            writes.append(NewRecordWrite(record: item.newRecord, alias: alias))
        }
        return writes
    }

    /// The request's answer from its writes' outcomes (committed, or in the transaction under
    /// way for an audited create), when they settle every value: each stored, or found live with
    /// an alias in its format. Nil: ``create(_:caller:in:stored:)`` does the rest.
    func created(
        _ prepared: [PreparedAlias], writes: [NewRecordWrite], outcomes: [NewRecordOutcome], caller: AliasCaller
    ) -> Created? {
        var created = Created()
        created.answers.reserveCapacity(prepared.count)
        for (index, item) in prepared.enumerated() {
            var record: StoredRecord
            let alias: IssuedAlias
            switch outcomes[index] {
            case .stored:
                record = writes[index].record
                alias = writes[index].alias
                record.aliases = [alias]
            case let .found(found):
                record = found
                if let expires = record.expiresAt, expires <= clock() { return nil }
                record.aliases.removeAll { !isAuthentic($0, recordID: record.id) }
                guard
                    let issued = record.aliases.first(where: {
                        $0.matches(item.request.format, luhnValid: item.request.luhnValid)
                    })
                else { return nil }
                alias = issued
            case .storedWithoutAlias, .notStored:
                return nil
            }
            if cache != nil { created.records.append(record) }
            created.stored.append((record.id, alias))
            // An audited create's event, as ``create(_:caller:in:stored:)`` notes it (the
            // executor keeps this call's notes only when it answers the request).
            VaultAuditing.note(auditReference(alias.alias), .ok, .create)
            created.answers.append(answer(item, record: record, alias: alias, caller: caller))
        }
        return created
    }

    /// The records committed for the request, by value index, with the alias each got.
    static func storedRecords(_ writes: [NewRecordWrite], _ outcomes: [NewRecordOutcome]) -> [Int: StoredRecord] {
        var stored: [Int: StoredRecord] = [:]
        for (index, outcome) in outcomes.enumerated() {
            var record = writes[index].record
            switch outcome {
            case .stored: record.aliases = [writes[index].alias]
            case .storedWithoutAlias: record.aliases = []
            case .found, .notStored: continue
            }
            stored[index] = record
        }
        return stored
    }
}
