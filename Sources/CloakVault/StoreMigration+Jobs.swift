extension StoreMigration {
    /// The source's jobs by what a migration means for them. Jobs are never copied: one that
    /// has not ended (receiving its input, queued, running, awaiting approval) would be lost
    /// with its cursor and lease, so a source holding one is refused; a cancelled one could be
    /// resumed on the source, never on the destination; the files of every ended one stay on
    /// the source (only a node serving a store sweeps it), to be downloaded from there.
    struct SourceJobs {
        var open: [JobID] = []
        var cancelled: [JobID] = []
        var ended = 0
    }

    /// Every job of the source, a page of ``jobPage`` at a time (newest first).
    func sourceJobs() throws(StoreError) -> SourceJobs {
        var jobs = SourceJobs()
        var before: JobID?
        while true {
            let page = try source.jobs(before: before, owner: nil, limit: jobPage)
            for job in page {
                switch job.state {
                case .cancelled: jobs.cancelled.append(job.id)
                case .done, .failed: jobs.ended += 1
                case .receiving, .queued, .running, .awaitingApproval: jobs.open.append(job.id)
                }
            }
            guard page.count == jobPage, let last = page.last else { return jobs }
            before = last.id
        }
    }

    /// The source's jobs, refused when one has not ended: checked before anything is copied,
    /// and again after the copy (`copied`), since a node still serving the source may have
    /// taken one meanwhile (what was copied stays then; a later run resumes).
    func endedJobs(copied: Bool) throws(Error) -> SourceJobs {
        let jobs: SourceJobs
        do { jobs = try sourceJobs() } catch { throw .store(error) }
        guard jobs.open.isEmpty else {
            throw .unfinishedJobs(count: jobs.open.count, first: Array(jobs.open.prefix(3)), copied: copied)
        }
        return jobs
    }

    /// Up to the first three of `ids`, and "…" when there are more: how jobs are named to an
    /// operator.
    package static func named(_ ids: [JobID], of count: Int) -> String {
        ids.prefix(3).map(\.text).joined(separator: ", ") + (count > min(ids.count, 3) ? ", …" : "")
    }
}
