extension StoreMigration {
    /// What the destination lacks or holds otherwise than the source, one line per kind, naming
    /// counts and record ids or value names, never a value: empty when it holds everything the
    /// source does, as it is there. Reads both stores whole (run it once the nodes are stopped).
    package func verify() throws(Error) -> [String] {
        var differ: [Kind: (count: Int, first: String)] = [:]
        func note(_ kind: Kind, _ what: String) {
            differ[kind] = (differ[kind].map { $0.count + 1 } ?? 1, differ[kind]?.first ?? what)
        }
        do throws(StoreError) {
            var after: String?
            while true {
                let page = try source.records(after: after, limit: batch)
                guard let last = page.last else { break }
                for record in page {
                    guard let first = record.aliases.first else { continue }
                    guard let copy = try destination.record(alias: first.alias), Self.same(record, copy) else {
                        note(.records, record.id)
                        continue
                    }
                    let file = try source.file(recordID: record.id)
                    let copied = try destination.file(recordID: record.id)
                    guard file != nil || copied != nil else { continue }
                    guard let file, let copied, try sameContent(file, copied) else {
                        note(.files, record.id)
                        continue
                    }
                }
                after = last.id
            }
            after = nil
            while true {
                let page = try source.groups(after: after, limit: batch)
                guard let last = page.last else { break }
                for group in page where try destination.group(id: group.id) != group { note(.groups, group.id) }
                after = last.id
            }
            for name in try source.metadataNames(prefix: "") where !Self.storeOwnNames.contains(name) {
                let kind = kind(of: name)
                guard kind.difference == .refuse else { continue }  // hints and nodes' own
                if try source.metadata(name) != destination.metadata(name) { note(kind.kind, name) }
            }
            // Records the destination holds beyond the source's (deleted from the source since
            // an earlier copy): a deleted card must not live on in the copy.
            let extra = try destination.recordCount() - source.recordCount()
            if extra > 0 {
                differ[.records] = (
                    (differ[.records]?.count ?? 0) + extra,
                    differ[.records]?.first ?? "the destination holds \(extra) more"
                )
            }
            // A job not ended on the source is lost to the destination (jobs are not copied).
            for job in try sourceJobs().open { note(.jobs, job.text) }
            var offset = 0
            while true {
                let mine = try source.keyAuditEntries(offset: offset, limit: 1_000)
                let theirs = try destination.keyAuditEntries(offset: offset, limit: 1_000)
                if mine.isEmpty { break }
                for (i, entry) in mine.enumerated()
                where i >= theirs.count || theirs[i].line != entry.line || theirs[i].at != entry.at {
                    note(.audit, "line \(offset + i + 1)")
                }
                offset += mine.count
            }
        } catch {
            throw .store(error)
        }
        return differ.keys.sorted().map { kind in
            let (count, first) = differ[kind]!
            return "\(kind.rawValue): \(count) missing or different in the destination (first: \(first))"
        }
    }

    /// Whether a copied record is its source's (the source's place in an intent bucket aside).
    static func same(_ a: StoredRecord, _ b: StoredRecord) -> Bool {
        a.id == b.id && a.fingerprint == b.fingerprint && a.keyID == b.keyID && a.sealed == b.sealed
            && a.storage == b.storage && a.classifiers == b.classifiers && a.createdAt == b.createdAt
            && a.expiresAt == b.expiresAt && a.intent == b.intent && a.metadata == b.metadata
            && Set(a.aliases.map(\.alias)) == Set(b.aliases.map(\.alias))
            && a.aliases.allSatisfy { alias in b.aliases.contains(alias) }
    }

    /// Whether two files hold the same sealed key and chunks.
    private func sameContent(_ a: StoredFile, _ b: StoredFile) throws(StoreError) -> Bool {
        guard a.uploadID == b.uploadID, a.keyID == b.keyID, a.wrappedKey == b.wrappedKey, a.chunkCount == b.chunkCount
        else { return false }
        var index = 0
        while index < a.chunkCount {
            let mine = try source.fileChunks(uploadID: a.uploadID, from: index, limit: 64)
            let theirs = try destination.fileChunks(uploadID: b.uploadID, from: index, limit: 64)
            guard !mine.isEmpty, mine == theirs else { return false }
            index += mine.count
        }
        return true
    }
}
