import CloakCore
import CloakCrypto
import CloakVault

/// A running import's input as rows numbered as the job's cursor counts them: the chunks read
/// so far, and the rows not yet committed (those before the job's cursor, committed by
/// whoever ran it before, are skipped). Rows are asked for by number (``ImportSteps`` says
/// which), so a batch that did not commit is read again from where it began.
package struct InputCursor {
    private let job: StoredJob
    private let seal: JobSeal
    private var reader: ImportReader
    /// Rows at the input's start still to skip (committed before this run).
    private var skip: Int64
    private var chunk = 0
    private var ended = false
    /// The rows read and not yet committed; the first is row `base`.
    private var pending: [ImportReader.Item] = []
    private var base: Int64

    init(job: StoredJob, seal: JobSeal, plan: ImportPlan) {
        self.job = job
        self.seal = seal
        reader = ImportReader(plan: plan)
        skip = job.progress.cursor
        base = job.progress.cursor
    }

    /// Up to `limit` rows from row `from` (not before the last commit), and whether they end
    /// the input.
    mutating func next(
        from row: Int64, limit: Int, read: (JobID, Int) -> Result<[[UInt8]], any Error>
    ) throws -> (items: [ImportReader.Item], isLast: Bool) {
        // Never in a release build's trap: a runner that asks for rows it committed fails its job.
        guard row >= base else {
            throw ImportReader.Fatal(description: "the job's runner asked again for rows it had committed")
        }
        let offset = Int(row - base)
        while pending.count - offset < limit && !ended {
            let chunks = try read(job.id, chunk).get()
            guard !chunks.isEmpty else {
                throw ImportReader.Fatal(
                    description: "the job's input ends before its last part (cut short in the store)")
            }
            for sealed in chunks where !ended {
                let opened: (bytes: [UInt8], isLast: Bool)
                do { opened = try seal.open(sealed, part: JobPart.input.rawValue, index: chunk) } catch {
                    throw ImportReader.Fatal(
                        description: "the job's input does not open with its key (altered in the store)")
                }
                chunk += 1
                var items = try reader.feed(opened.bytes)
                if opened.isLast {
                    items += try reader.finish()
                    ended = true
                }
                for item in items {
                    if skip > 0 {
                        skip -= 1
                    } else {
                        pending.append(item)
                    }
                }
            }
        }
        let take = Array(pending[min(offset, pending.count)...].prefix(limit))
        return (take, ended && offset + take.count == pending.count)
    }

    /// The rows before `cursor` are committed: they are not kept any more.
    mutating func committed(through cursor: Int64) {
        let done = Int(max(0, min(cursor - base, Int64(pending.count))))
        pending.removeFirst(done)
        base = cursor
    }
}
