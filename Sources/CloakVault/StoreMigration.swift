/// Copies every record of one store into another as it is: still sealed (never decrypted), with
/// its fingerprint, aliases and their signatures, its file (wrapped key and chunks) if it has one,
/// and the store's key-check value, so the same keys open the copy. Re-running it is safe: records already in the destination are skipped.
package struct StoreMigration {
    package struct Report: Sendable, Equatable {
        package var copied = 0
        package var skipped = 0
        /// Files copied (each with all its chunks).
        package var files = 0
        package var sourceRecords = 0
        package var destinationRecords = 0
    }

    package enum Error: Swift.Error, CustomStringConvertible {
        case differentKeys
        case countMismatch(source: Int, destination: Int)
        case store(StoreError)

        package var description: String {
            switch self {
            case .differentKeys:
                return "the destination already holds records sealed with other keys; nothing was copied"
            case let .countMismatch(source, destination):
                return
                    "the destination holds \(destination) records after the copy, the source \(source): check both stores"
            case let .store(error): return error.description
            }
        }
    }

    package let source: any AliasStore
    package let destination: any AliasStore
    /// Records per destination transaction.
    package var batch = 500

    package init(from source: any AliasStore, to destination: any AliasStore) {
        self.source = source
        self.destination = destination
    }

    /// Copies, then checks that the destination holds at least every source record.
    package func run(progress: (Report) -> Void = { _ in }) throws(Error) -> Report {
        var report = Report()
        try copyMetadata()
        do throws(StoreError) {
            var after: String?
            while true {
                let page = try source.records(after: after, limit: batch)
                guard let last = page.last else { break }
                try destination.begin()
                do throws(StoreError) {
                    for record in page {
                        if let first = record.aliases.first, try destination.record(alias: first.alias)?.id == record.id
                        {
                            report.skipped += 1
                        } else {
                            // Intents' places are the source store's count: copied as they are,
                            // they would be given back by the destination's trigger without ever
                            // having been taken there. They hold no place there (for at most a
                            // day: they expire).
                            var record = record
                            record.bucket = nil
                            try destination.insert(record)
                            report.copied += 1
                        }
                    }
                    try destination.commit()
                } catch {
                    destination.rollback()
                    throw error
                }
                after = last.id
                progress(report)
            }
            try copyFiles(&report)
            report.sourceRecords = try source.recordCount()
            report.destinationRecords = try destination.recordCount()
        } catch {
            throw .store(error)
        }
        guard report.destinationRecords >= report.sourceRecords else {
            throw .countMismatch(source: report.sourceRecords, destination: report.destinationRecords)
        }
        return report
    }

    /// Finished files go along with their records, still sealed: the row (its wrapped key) and
    /// every chunk, one file per destination transaction, finished into the same record id. A
    /// file the destination has already is skipped.
    private func copyFiles(_ report: inout Report) throws(StoreError) {
        var after: String?
        while true {
            let page = try source.finishedFiles(after: after, limit: 50)
            guard let last = page.last else { return }
            for file in page {
                guard let recordID = file.recordID, try destination.file(recordID: recordID) == nil else { continue }
                try destination.begin()
                do throws(StoreError) {
                    var started = file
                    started.chunkCount = 0
                    started.recordID = nil
                    try destination.startFile(started)
                    var index = 0
                    while index < file.chunkCount {
                        let chunks = try source.fileChunks(uploadID: file.uploadID, from: index, limit: 64)
                        guard !chunks.isEmpty else { break }
                        for chunk in chunks {
                            try destination.appendFileChunk(uploadID: file.uploadID, index: index, sealed: chunk)
                            index += 1
                        }
                    }
                    guard
                        try destination.finishFile(
                            uploadID: file.uploadID, chunkCount: file.chunkCount, recordID: recordID)
                    else { throw StoreError.unavailable("a file's chunks did not all reach the destination") }
                    try destination.commit()
                    report.files += 1
                } catch {
                    destination.rollback()
                    throw error
                }
            }
            after = last.uploadID
        }
    }

    /// The key-check value goes along (a destination with another one is refused), and so do the
    /// mark that every alias row is signed and the wrapped key ring.
    private func copyMetadata() throws(Error) {
        var differentKeys = false
        do throws(StoreError) {
            try destination.begin()
            for name in [Vault.keyCheckName, Vault.aliasesSignedName, Vault.keyRingName] {
                guard let value = try source.metadata(name) else { continue }
                if let existing = try destination.metadata(name) {
                    if name == Vault.keyCheckName && existing != value { differentKeys = true }
                } else {
                    try destination.setMetadata(name, value)
                }
            }
            if differentKeys { destination.rollback() } else { try destination.commit() }
        } catch {
            destination.rollback()
            throw .store(error)
        }
        if differentKeys { throw .differentKeys }
    }
}
