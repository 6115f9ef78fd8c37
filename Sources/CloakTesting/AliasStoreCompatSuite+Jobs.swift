import CloakCore
import CloakCrypto
import CloakVault
import Testing

extension AliasStoreCompatSuite {
    // MARK: Bulk jobs (issue 60)

    private func job(_ tag: String, state: JobState, owner: String = "importer") -> StoredJob {
        StoredJob(
            id: JobID("job_\(tag)")!, kind: .import, state: state, spec: Array(#"{"form":"card"}"#.utf8),
            owner: owner, keyID: "k1", wrappedKey: SecureRandom.bytes(60), createdAt: Self.now)
    }

    /// Leaves no job another case (or a later run on the same database) could take.
    private func settleLeftoverJobs(_ store: any AliasStore) throws {
        while let left = try transaction(store, { try store.claimJob(holder: "sweeper", now: Int64.max - 1, until: 0) })
        {
            _ = try transaction(store) {
                try store.setJobState(
                    left.id, from: [.running], to: .cancelled, holder: "sweeper", now: Self.now, expiresAt: Self.now,
                    failure: nil)
            }
        }
    }

    func jobsAreTakenByOneHolderAndAdvancedOnlyByIt() throws {
        let store = try makeStore()
        try settleLeftoverJobs(store)
        let tag = String(UInt32.random(in: 0...UInt32.max), radix: 16)
        let made = job("a\(tag)", state: .receiving)
        try transaction(store) { try store.createJob(made) }
        // Input arrives in order, only while the job receives; nothing takes a receiving job.
        let input = (0..<3).map { _ in SecureRandom.bytes(80) }
        for (index, chunk) in input.enumerated() {
            #expect(
                try transaction(store) { try store.appendJobInput(made.id, index: index, sealed: chunk, now: Self.now) }
            )
        }
        #expect(
            try transaction(store) { try store.appendJobInput(made.id, index: 5, sealed: [1], now: Self.now) } == false)
        #expect(try transaction(store) { try store.claimJob(holder: "a", now: Self.now, until: Self.now + 30) } == nil)
        #expect(
            try transaction(store) {
                try store.setJobState(
                    made.id, from: [.receiving], to: .queued, holder: nil, now: Self.now, expiresAt: nil, failure: nil)
            })
        #expect(
            try transaction(store) { try store.appendJobInput(made.id, index: 3, sealed: [1], now: Self.now) } == false)
        #expect(try store.jobChunks(made.id, part: .input, from: 0, limit: 10) == input)
        #expect(try store.jobChunks(made.id, part: .input, from: 2, limit: 10) == [input[2]])

        // One holder at a time, until its lease lapses.
        let taken = try #require(
            try transaction(store) { try store.claimJob(holder: "a", now: Self.now, until: Self.now + 30) })
        #expect(
            taken.id == made.id && taken.state == .running && taken.lease == JobLease(holder: "a", until: Self.now + 30)
        )
        #expect(taken.inputChunks == 3 && taken.spec == made.spec && taken.wrappedKey == made.wrappedKey)
        #expect(
            try transaction(store) { try store.claimJob(holder: "b", now: Self.now + 10, until: Self.now + 40) } == nil)

        // A step is taken by the holder from the cursor it read, with its outputs, or not at all.
        let first = JobProgress(
            cursor: 500, imported: 498, refused: 2, outputChunks: 1, mappingBytes: 40_000, adviceBytes: 30_000)
        let outputs = [
            JobOutputChunk(part: .mapping, index: 0, sealed: SecureRandom.bytes(40)),
            JobOutputChunk(part: .advice, index: 0, sealed: SecureRandom.bytes(50)),
        ]
        #expect(
            try transaction(store) {
                try store.advanceJob(
                    made.id, holder: "b", from: 0, to: first, leaseUntil: Self.now + 60, outputs: outputs, now: Self.now
                )
            } == false)
        #expect(
            try transaction(store) {
                try store.advanceJob(
                    made.id, holder: "a", from: 0, to: first, leaseUntil: Self.now + 60, outputs: outputs, now: Self.now
                )
            })
        #expect(
            try transaction(store) {
                try store.advanceJob(
                    made.id, holder: "a", from: 0, to: first, leaseUntil: Self.now + 60, outputs: [], now: Self.now)
            } == false)
        #expect(try store.job(made.id)?.progress == first)
        #expect(try store.jobChunks(made.id, part: .mapping, from: 0, limit: 10) == [outputs[0].sealed])
        #expect(try store.jobChunks(made.id, part: .advice, from: 0, limit: 10) == [outputs[1].sealed])

        // A step rolled back with its batch leaves the job where it was.
        store.rollback()
        try store.begin()
        let second = JobProgress(cursor: 900, imported: 898, refused: 2, outputChunks: 2)
        #expect(
            try store.advanceJob(
                made.id, holder: "a", from: 500, to: second, leaseUntil: Self.now + 60,
                outputs: [JobOutputChunk(part: .mapping, index: 1, sealed: [9])], now: Self.now))
        store.rollback()
        #expect(try store.job(made.id)?.progress == first)
        #expect(try store.jobChunks(made.id, part: .mapping, from: 0, limit: 10).count == 1)

        // The lease renewed by the step lapses; another node takes the job where it is.
        #expect(
            try transaction(store) { try store.claimJob(holder: "b", now: Self.now + 59, until: Self.now + 90) } == nil)
        let retaken = try #require(
            try transaction(store) { try store.claimJob(holder: "b", now: Self.now + 61, until: Self.now + 90) })
        #expect(retaken.lease?.holder == "b" && retaken.progress == first)
        #expect(
            try transaction(store) {
                try store.advanceJob(
                    made.id, holder: "a", from: 500, to: second, leaseUntil: Self.now + 99, outputs: [], now: Self.now)
            } == false)
        // Only the holder ends its job; a cancel from outside needs no holder.
        #expect(
            try transaction(store) {
                try store.setJobState(
                    made.id, from: [.running], to: .done, holder: "a", now: Self.now, expiresAt: nil, failure: nil)
            } == false)
        #expect(
            try transaction(store) {
                try store.setJobState(
                    made.id, from: [.queued, .running], to: .cancelled, holder: nil, now: Self.now + 62,
                    expiresAt: Self.now + 1000, failure: nil)
            })
        let cancelled = try #require(try store.job(made.id))
        #expect(cancelled.state == .cancelled && cancelled.lease == nil && cancelled.expiresAt == Self.now + 1000)
        #expect(
            try transaction(store) {
                try store.advanceJob(
                    made.id, holder: "b", from: 500, to: second, leaseUntil: Self.now + 99, outputs: [], now: Self.now)
            } == false)
        #expect(
            try transaction(store) { try store.claimJob(holder: "c", now: Self.now + 500, until: Self.now + 530) }
                == nil)
        _ = try transaction(store) { try store.deleteJobChunks(made.id, part: .input, limit: jobChunksPerDelete) }
        #expect(try store.jobChunks(made.id, part: .input, from: 0, limit: 10) == [])
        #expect(try store.jobChunks(made.id, part: .mapping, from: 0, limit: 10).count == 1)
    }

    /// An import's batch writes its new records in the transaction under way: rolled back with
    /// it, or committed with it.
    func newRecordsAreInsertedInTheTransactionUnderWay() throws {
        let store = try makeStore()
        let tag = String(UInt32.random(in: 0...UInt32.max), radix: 16)
        var record = Self.record("rec_n\(tag)", aliases: [])
        record.fingerprint = SecureRandom.bytes(32)
        let write = NewRecordWrite(record: record, alias: Self.alias("tok_n\(tag)"))
        try store.begin()
        #expect(try store.insertNewRecords([write], durable: false) == [.stored])
        store.rollback()
        #expect(try store.record(alias: "tok_n\(tag)") == nil)
        let outcomes = try transaction(store) { try store.insertNewRecords([write, write], durable: false) }
        #expect(outcomes.first == .stored)
        #expect(try store.record(alias: "tok_n\(tag)")?.id == record.id)
        #expect(
            try transaction(store) { try store.insertNewRecords([write], durable: false) }.first.map {
                if case .found(let found) = $0 { return found.id == record.id } else { return false }
            } == true)
    }

    /// An export's approval moves it on once, only before its expiry; a node that writes an
    /// export again writes over the chunks written before.
    func exportsAreApprovedOnceAndRewrittenInPlace() throws {
        let store = try makeStore()
        try settleLeftoverJobs(store)
        let tag = String(UInt32.random(in: 0...UInt32.max), radix: 16)
        let waiting = job("x\(tag)", state: .receiving)
        let lapsed = job("y\(tag)", state: .receiving)
        for (made, expiry) in [(waiting, Self.now + 100), (lapsed, Self.now - 1)] {
            try transaction(store) {
                try store.createJob(made)
                _ = try store.setJobState(
                    made.id, from: [.receiving], to: .awaitingApproval, holder: nil, now: Self.now, expiresAt: expiry,
                    failure: nil)
            }
        }
        #expect(try store.job(waiting.id)?.state == .awaitingApproval)
        // A job's key keeps its data key in use (`cloak keys retire` refuses it meanwhile).
        #expect((try store.recordCounts()["k1"] ?? 0) >= 2)
        #expect(try transaction(store) { try store.claimJob(holder: "a", now: Self.now, until: Self.now + 30) } == nil)
        let approval = SecureRandom.bytes(70)
        #expect(try transaction(store) { try store.approveJob(waiting.id, approval: approval, now: Self.now) })
        #expect(try transaction(store) { try store.approveJob(waiting.id, approval: [1], now: Self.now) } == false)
        #expect(try transaction(store) { try store.approveJob(lapsed.id, approval: [1], now: Self.now) } == false)
        let approved = try #require(try store.job(waiting.id))
        #expect(approved.state == .queued && approved.expiresAt == nil)
        #expect(try store.job(lapsed.id)?.state == .awaitingApproval)
        #expect(try store.jobChunks(waiting.id, part: .approval, from: 0, limit: 5) == [approval])
        #expect(try store.jobChunks(lapsed.id, part: .approval, from: 0, limit: 5).isEmpty)

        let taken = try #require(
            try transaction(store) { try store.claimJob(holder: "a", now: Self.now, until: Self.now + 30) })
        #expect(taken.id == waiting.id)
        let (first, second) = (SecureRandom.bytes(40), SecureRandom.bytes(41))
        for (cursor, sealed) in [(Int64(0), first), (Int64(7), second)] {
            #expect(
                try transaction(store) {
                    try store.advanceJob(
                        waiting.id, holder: "a", from: cursor, to: JobProgress(cursor: 7, outputChunks: 1),
                        leaseUntil: Self.now + 30, outputs: [JobOutputChunk(part: .export, index: 0, sealed: sealed)],
                        now: Self.now)
                })
        }
        #expect(try store.jobChunks(waiting.id, part: .export, from: 0, limit: 5) == [second])
        try settleLeftoverJobs(store)
        _ = try transaction(store) { try store.deleteExpiredJobs(now: Int64.max - 1, idleBefore: 0, limit: 100) }
    }

    /// A large input or an expired job's many chunks go a slice at a time: each call deletes at
    /// most its limit, and says so until nothing is left.
    /// What a token's imports hold in all (review V, item 9): receiving, queued, running and
    /// cancelled ones count whole; done and failed ones by what is left of their input (the
    /// sweep deletes it a slice at a time); another token's and the one asking do not.
    func aTokensHeldInputIsCountedAcrossItsImports() throws {
        let store = try makeStore()
        let tag = String(UInt32.random(in: 0...UInt32.max), radix: 16)
        let owner = "holder-\(tag)"
        var chunks: [JobState: Int] = [:]
        for (i, state) in [JobState.receiving, .queued, .running, .cancelled, .done, .failed].enumerated() {
            let made = job("h\(i)\(tag)", state: .receiving, owner: owner)
            try transaction(store) { try store.createJob(made) }
            for index in 0...i {
                _ = try transaction(store) {
                    try store.appendJobInput(made.id, index: index, sealed: [1], now: Self.now)
                }
            }
            chunks[state] = i + 1
            if state != .receiving {
                _ = try transaction(store) {
                    try store.setJobState(
                        made.id, from: [.receiving], to: state, holder: nil, now: Self.now, expiresAt: nil, failure: nil
                    )
                }
            }
        }
        let other = job("ho\(tag)", state: .receiving, owner: "another-\(tag)")
        try transaction(store) { try store.createJob(other) }
        _ = try transaction(store) { try store.appendJobInput(other.id, index: 0, sealed: [1], now: Self.now) }
        let asking = JobID("job_ask\(tag)")!
        #expect(try store.jobInputChunks(owner: owner, except: asking) == 1 + 2 + 3 + 4 + 5 + 6)
        #expect(try store.jobInputChunks(owner: owner, except: JobID("job_h0\(tag)")!) == 2 + 3 + 4 + 5 + 6)
        #expect(try store.jobInputChunks(owner: "nobody-\(tag)", except: asking) == 0)
        // The failed job's input deleted in part, the done job's whole: what is left counts.
        _ = try transaction(store) { try store.deleteJobChunks(JobID("job_h5\(tag)")!, part: .input, limit: 4) }
        _ = try transaction(store) { try store.deleteJobChunks(JobID("job_h4\(tag)")!, part: .input, limit: 100) }
        #expect(try store.jobInputChunks(owner: owner, except: asking) == 1 + 2 + 3 + 4 + 2)
        try settleLeftoverJobs(store)
    }

    func jobChunksAreDeletedASliceAtATime() throws {
        let store = try makeStore()
        try settleLeftoverJobs(store)
        let tag = String(UInt32.random(in: 0...UInt32.max), radix: 16)
        let made = job("s\(tag)", state: .receiving)
        try transaction(store) { try store.createJob(made) }
        for index in 0..<40 {
            #expect(
                try transaction(store) { try store.appendJobInput(made.id, index: index, sealed: [1], now: Self.now) })
        }
        #expect(try transaction(store) { try store.deleteJobChunks(made.id, part: .input, limit: 16) } == 16)
        // The first ones first: the input is read from its start, never with a hole.
        #expect(try store.jobChunks(made.id, part: .input, from: 0, limit: 100).count == 24)
        #expect(try store.jobChunks(made.id, part: .input, from: 16, limit: 1).count == 1)
        #expect(try store.jobChunks(made.id, part: .input, from: 15, limit: 100).count == 24)
        #expect(
            try transaction(store) {
                try store.setJobState(
                    made.id, from: [.receiving], to: .failed, holder: nil, now: Self.now, expiresAt: Self.now + 10,
                    failure: "cut short")
            })
        var calls: [Int] = []
        while calls.count < 10 {
            let deleted = try transaction(store) {
                try store.deleteExpiredJobs(now: Self.now + 10, idleBefore: 0, limit: 10)
            }
            calls.append(deleted)
            if deleted < 10 { break }
        }
        // 24 chunks, then the job: 10, 10, then 4 and the job (more when another suite's jobs
        // expire in a shared database, never more than the limit a call).
        #expect(calls.count >= 3 && calls.allSatisfy { $0 <= 10 } && calls.last! < 10)
        #expect(try store.job(made.id) == nil)
    }

    func jobsAreListedNewestFirstAndExpireWithTheirChunks() throws {
        let store = try makeStore()
        try settleLeftoverJobs(store)
        let tag = String(UInt32.random(in: 0...UInt32.max), radix: 16)
        // Ids sort by creation (``JobID/make(now:)``): these three in this order.
        let made = ["1", "2", "3"].map {
            job("b\(tag)_\($0)", state: .receiving, owner: $0 == "2" ? "other" : "importer")
        }
        for job in made { try transaction(store) { try store.createJob(job) } }
        let page = try store.jobs(before: nil, owner: nil, limit: 1000).filter { $0.id.text.hasPrefix("job_b\(tag)") }
        #expect(page.map(\.id) == made.reversed().map(\.id))
        let mine = try store.jobs(before: made[2].id, owner: "importer", limit: 1000)
            .filter { $0.id.text.hasPrefix("job_b\(tag)") }
        #expect(mine.map(\.id) == [made[0].id])
        for job in made {
            #expect(
                try transaction(store) { try store.appendJobInput(job.id, index: 0, sealed: [1, 2], now: Self.now) })
        }
        // Ended jobs expire at their time; a receiving job once it has been idle too long.
        #expect(
            try transaction(store) {
                try store.setJobState(
                    made[0].id, from: [.receiving], to: .failed, holder: nil, now: Self.now, expiresAt: Self.now + 100,
                    failure: "the input is not CSV")
            })
        #expect(try store.job(made[0].id)?.failure == "the input is not CSV")
        #expect(
            try transaction(store) {
                try store.appendJobInput(made[1].id, index: 1, sealed: [3], now: Self.now + 50)
            })
        // Cancelling a job that still receives fails it and drops its input; a queued one is
        // cancelled with its input kept (it can resume).
        let receiving = job("b\(tag)_4", state: .receiving)
        try transaction(store) { try store.createJob(receiving) }
        #expect(try transaction(store) { try store.appendJobInput(receiving.id, index: 0, sealed: [7], now: Self.now) })
        #expect(
            try transaction(store) { try store.cancelJob(receiving.id, now: Self.now, expiresAt: Self.now + 50) }
                == .failed)
        #expect(try store.jobChunks(receiving.id, part: .input, from: 0, limit: 10) == [])
        #expect(
            try transaction(store) { try store.cancelJob(receiving.id, now: Self.now, expiresAt: Self.now + 50) }
                == nil)
        _ = try transaction(store) {
            try store.deleteExpiredJobs(now: Self.now + 99, idleBefore: Self.now + 10, limit: 100)
        }
        #expect(try store.job(receiving.id) == nil)
        #expect(try store.job(made[0].id) != nil)
        // The failed job stays until it expires; its input does not.
        #expect(try store.jobChunks(made[0].id, part: .input, from: 0, limit: 10) == [])
        #expect(try store.job(made[1].id) != nil)
        #expect(try store.job(made[2].id) == nil)
        #expect(try store.jobChunks(made[2].id, part: .input, from: 0, limit: 10) == [])
        _ = try transaction(store) {
            try store.deleteExpiredJobs(now: Self.now + 100, idleBefore: Self.now + 51, limit: 100)
        }
        #expect(try store.job(made[0].id) == nil)
        #expect(try store.job(made[1].id) == nil)
        #expect(try store.jobChunks(made[1].id, part: .input, from: 0, limit: 10) == [])
    }
}
