import CloakCore
import CloakCrypto
import CloakVault

extension KeyAdministration {
    /// What `rewrap` did per version it found records under.
    package struct RewrapReport: Sendable {
        package var current: String
        /// Records re-sealed with the current version, by the version they were under.
        package var resealed: [String: Int] = [:]
        /// Records a node changed or deleted meanwhile (left as they were; a later run re-seals
        /// what is still under an old version).
        package var skipped = 0
        package var audit = ""
    }

    /// Re-seals every record still under an older version with the current one, `batch` records
    /// per transaction. `progress` is called after each batch with the version, how many of its
    /// records are done, and how many it had at the start.
    package func rewrap(batch: Int, progress: (String, Int, Int) -> Void) throws -> RewrapReport {
        let opened = try open()
        let rewrap = KeyRewrap(store: store, keys: opened.ring)
        var report = RewrapReport(current: opened.ring.currentID)
        for (version, total) in try rewrap.pending() {
            guard opened.ring.key(id: version) != nil else {
                throw Failure(
                    "\(total) records are sealed with \(version), which the key ring no longer holds "
                        + "(restored from an old backup?): restore that key's ring to re-seal them")
            }
            var done = 0
            // Records, then the files and the jobs whose own key is sealed with the version
            // (a finished job's key counts until the job expires: review V, item 10), then
            // the groups sealed with it.
            for kind in KeyUse.allCases {
                var cursor: String?
                repeat {
                    let result =
                        switch kind {
                        case .records: try rewrap.batch(version: version, after: cursor, limit: batch)
                        case .files: try rewrap.fileBatch(version: version, after: cursor, limit: batch)
                        case .jobs: try rewrap.jobBatch(version: version, after: cursor, limit: batch)
                        case .groups: try rewrap.groupBatch(version: version, after: cursor, limit: batch)
                        }
                    let handled = result.resealed + result.skipped
                    done += handled
                    report.resealed[version, default: 0] += result.resealed
                    report.skipped += result.skipped
                    if handled > 0 || kind == .records { progress(version, done, total) }
                    cursor = result.next
                } while cursor != nil
            }
        }
        report.audit = try record(
            .keysRewrap, ring: opened.ring,
            [
                ("current", .string(report.current)),
                (
                    "resealed",
                    .object(report.resealed.sorted { $0.key < $1.key }.map { ($0.key, .number(String($0.value))) })
                ),
                ("skipped", .number(String(report.skipped))),
            ])
        return report
    }
}
