/// A new record with its first alias, for ``AliasStore/commitNewRecords(_:durable:)``.
package struct NewRecordWrite: Sendable {
    /// The record, without aliases.
    package var record: StoredRecord
    package var alias: IssuedAlias

    package init(record: StoredRecord, alias: IssuedAlias) {
        self.record = record
        self.alias = alias
    }
}

/// What ``AliasStore/commitNewRecords(_:durable:)`` did with one ``NewRecordWrite``.
package enum NewRecordOutcome: Sendable, Equatable {
    /// The record and its alias are stored.
    case stored
    /// The record is stored, but its alias was another record's: it has no alias yet.
    case storedWithoutAlias
    /// A record with this fingerprint was stored before the batch: here it is as it was, with its
    /// aliases. Nothing was written for it.
    case found(StoredRecord)
    /// Nothing was written, and what stands in the way was not read: the value was stored by a
    /// write of the same batch or by another writer meanwhile. Look it up again.
    case notStored
}

extension NewRecordOutcome {
    package static func == (a: NewRecordOutcome, b: NewRecordOutcome) -> Bool {
        switch (a, b) {
        case (.stored, .stored), (.storedWithoutAlias, .storedWithoutAlias), (.notStored, .notStored): return true
        case let (.found(x), .found(y)): return x.id == y.id && x.aliases == y.aliases
        default: return false
        }
    }
}

extension AliasStore {
    /// ``AliasStore/commitNewRecords(_:durable:)`` with one statement per step: what a store
    /// whose statements cost a function call (SQLite) does, and the meaning any faster version
    /// must keep.
    package func commitNewRecordsOneByOne(_ writes: [NewRecordWrite], durable: Bool) throws(StoreError)
        -> [NewRecordOutcome]
    {
        try begin()
        do throws(StoreError) {
            let outcomes = try insertNewRecordsOneByOne(writes)
            if durable { try forceDurableCommit() }
            try commit()
            return outcomes
        } catch {
            rollback()
            throw error
        }
    }

    /// ``AliasStore/insertNewRecords(_:durable:)`` one statement per step, in the transaction under way.
    /// Every fingerprint is looked up before anything is written, as a single statement sees the
    /// store: a second write of one value in a batch is ``NewRecordOutcome/notStored``.
    package func insertNewRecordsOneByOne(_ writes: [NewRecordWrite]) throws(StoreError) -> [NewRecordOutcome] {
        var found: [StoredRecord?] = []
        for write in writes {
            if let fingerprint = write.record.fingerprint {
                found.append(try record(fingerprint: fingerprint))
            } else {
                found.append(nil)
            }
        }
        var outcomes: [NewRecordOutcome] = []
        for (write, existing) in zip(writes, found) {
            if let existing {
                outcomes.append(.found(existing))
                continue
            }
            try savepoint()
            do throws(StoreError) {
                try insert(write.record)
            } catch .fingerprintTaken, .aliasTaken {
                // A unique key of the record's stands in the way (SQLite names none of them).
                rollbackToSavepoint()
                outcomes.append(.notStored)
                continue
            }
            do throws(StoreError) {
                try addAlias(write.alias, toRecord: write.record.id)
                outcomes.append(.stored)
            } catch .aliasTaken {
                outcomes.append(.storedWithoutAlias)
            }
            try releaseSavepoint()
        }
        return outcomes
    }
}
