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

    /// Before anything is copied: refuses a source holding a job that has not ended.
    func checkJobs(_ report: inout Report) throws(Error) {
        let jobs: SourceJobs
        do { jobs = try sourceJobs() } catch { throw .store(error) }
        guard jobs.open.isEmpty else {
            throw .unfinishedJobs(count: jobs.open.count, first: Array(jobs.open.prefix(3)), copied: false)
        }
        report.jobsEnded = jobs.ended
        report.jobsCancelled = jobs.cancelled
    }

    /// After the copy: a job the source took meanwhile (a node still serving it) is named, and
    /// the run fails; what was copied is there, and a later run resumes.
    func recheckJobs() throws(Error) {
        let jobs: SourceJobs
        do { jobs = try sourceJobs() } catch { throw .store(error) }
        guard jobs.open.isEmpty else {
            throw .unfinishedJobs(count: jobs.open.count, first: Array(jobs.open.prefix(3)), copied: true)
        }
    }
}
