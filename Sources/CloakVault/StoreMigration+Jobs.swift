extension StoreMigration {
    /// Jobs are not copied. One that has not ended (receiving its input, queued, running,
    /// awaiting approval) would be lost with its cursor and lease, so the whole migration is
    /// refused before anything is copied; one that has ended is counted, and its mapping, advice
    /// or export file stays on the source until it expires (`jobs.output_ttl_s`). A cancelled
    /// job could be resumed on the source, never on the destination.
    func checkJobs(_ report: inout Report) throws(Error) {
        var open: [JobID] = []
        var ended = 0
        var before: JobID?
        do throws(StoreError) {
            while true {
                let page = try source.jobs(before: before, owner: nil, limit: 500)
                for job in page {
                    if job.state.isFinal { ended += 1 } else { open.append(job.id) }
                }
                guard page.count == 500, let last = page.last else { break }
                before = last.id
            }
        } catch {
            throw .store(error)
        }
        guard open.isEmpty else { throw .unfinishedJobs(count: open.count, first: Array(open.prefix(3))) }
        report.jobsLeft = ended
    }
}
