import ArgumentParser
import CloakCore
import CloakCrypto
import CloakJobs
import CloakService
import CloakVault
import Foundation

/// `cloak import`: a file of cards into the vault, as a job the nodes run (issue 60).
struct Import: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Import a CSV or JSON Lines file of values as a job; follows it to its end.",
        discussion: """
            Each row is checked with the form's rules (--form) or aliased in one format (--format, \
            columns id and value) exactly as POST /aliases would, under the limits of the token \
            --token names (it must hold jobs:import). The file is checked (its header, every row \
            counted), sealed into the store under a key of the job's own, and queued: the nodes \
            serving this store run it, a batch at a time, at limits.import_rows_per_hour; a node \
            killed mid-job leaves it to another after jobs.lease_s. Prints the job's id, then \
            progress on standard error, then the job's status (exit 0: done; 1: failed or \
            cancelled). cloak jobs mapping ID and cloak jobs advice ID write its outputs.
            """)
    @OptionGroup var options: ConfigOption
    @Option(help: "Check each row as a submission of this form (its fields are the columns, with id).") var form:
        String?
    @Option(help: "Alias each row's value column in this format (columns id and value).") var format: String?
    @Option(help: "The token the job runs for: its bucket_values_per_hour apply (must hold jobs:import).")
    var token: String
    @Option(help: "csv or jsonl (default: jsonl for .jsonl and .jsonl.gpg files, else csv).") var layout: String?
    @Option(help: "Renames the file's columns: source=column,… (e.g. pan=card_number,customer=id).") var map: String?
    @Option(help: "Columns of the file to read past: NAME,… (any other unknown column is refused).")
    var ignoreColumns: String?
    @Flag(help: "Print the job's id and return without following it.") var detach = false
    @Argument(help: "The file.") var file: String

    /// JSON Lines for a `.jsonl` file, encrypted or not (`.jsonl.gpg`, `.jsonl.pgp`,
    /// `.jsonl.asc`, as `cloak jobs file` names an export); CSV otherwise.
    static func layout(of file: String) -> ImportSpec.Layout {
        var name = file
        for suffix in [".gpg", ".pgp", ".asc"] where name.hasSuffix(suffix) { name.removeLast(suffix.count) }
        return name.hasSuffix(".jsonl") ? .jsonl : .csv
    }

    func validate() throws {
        guard (form == nil) != (format == nil) else { throw ValidationError("give one of --form and --format") }
        if let format, AliasFormatName(rawValue: format) == nil { throw ValidationError("no alias format \(format)") }
        if let layout, ImportSpec.Layout(rawValue: layout) == nil { throw ValidationError("--layout is csv or jsonl") }
    }

    func run() throws {
        // The forms, limits and jobs with the vault (the form's rules are checked before
        // anything is stored); never a route's step secret (review V, item 10).
        let configuration = try options.load(.jobs)
        let (store, ring) = Tokens.storeAndRing(configuration)
        let spec = ImportSpec(
            source: form.map { .form($0) } ?? .format(AliasFormatName(rawValue: format!)!),
            layout: layout.flatMap(ImportSpec.Layout.init(rawValue:)) ?? Import.layout(of: file),
            map: map,
            ignored: (ignoreColumns ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
                .filter { !$0.isEmpty },
            fileName: URL(fileURLWithPath: file).lastPathComponent)
        let full = configuration
        let job: StoredJob
        do {
            job = try ImportIntake(store: store, ring: ring, settings: full.jobs, forms: full.forms).start(
                spec: spec, owner: token, path: file, now: Tokens.now)
        } catch {
            Keys.fail("the import is refused; nothing was stored: \(error)")
        }
        Jobs.audit(
            .jobImport, token: token, store: store, ring: ring,
            [("job", job.id.text), ("source", form.map { "form \($0)" } ?? "format \(format ?? "")")])
        FileHandle.standardOutput.write(Data("\(job.id.text)\n".utf8))
        if detach { return }
        try Jobs.follow(job.id, store: store, ring: ring)
    }
}

struct Jobs: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List, follow, cancel and resume bulk jobs, and write their outputs.",
        subcommands: [
            List.self, Status.self, Cancel.self, Resume.self, Approve.self, Mapping.self, Advice.self, File.self,
        ])

    static func store(_ options: ConfigOption) throws -> (any AliasStore, KeyRing) {
        Tokens.storeAndRing(try options.load(.administration))
    }

    /// A job's change made here, as an audit event of this command's chain in the store (the
    /// token the event names is the job's; the operator's user name is in `by`).
    static func audit(
        _ action: AuditAction, token: String, store: any AliasStore, ring: KeyRing, _ facts: [(String, String)]
    ) {
        do {
            try store.transaction {
                try CommandAudit.append(
                    [Export.event(action, token: token, facts + [("by", Tokens.actor)])], keys: ring, to: store)
            }
        } catch {
            Tokens.warn("the audit event \(action) could not be written: \(error)")
        }
    }

    static func job(_ id: String, _ store: any AliasStore) -> StoredJob {
        guard let jobID = JobID(id) else { Keys.fail("not a job id: \(id)") }
        do {
            guard let job = try store.job(jobID) else {
                Keys.fail("no job \(id) (finished jobs go after jobs.output_ttl_s)")
            }
            return job
        } catch {
            Keys.fail("cannot read the store: \(error)")
        }
    }

    static func printJSON(_ value: JSONValue) {
        FileHandle.standardOutput.write(Data(JSONWriter.encode(value) + [0x0A]))
    }

    /// Shows the job's progress on standard error until it ends; exit 1 unless it is done.
    static func follow(_ id: JobID, store: any AliasStore, ring: KeyRing) throws {
        let terminal = isatty(2) == 1
        let started = Date()
        var last = Date.distantPast
        while true {
            let job = Self.job(id.text, store)
            let rows = job.kind == .export ? job.progress.imported : ImportSpec(stored: job.spec)?.rows
            let elapsed = max(Date().timeIntervalSince(started), 0.001)
            let rate = Double(job.progress.cursor) / elapsed
            var line = "\(job.state.rawValue): \(job.progress.cursor)"
            if let rows { line += "/\(rows) rows" } else { line += " rows" }
            line += String(format: ", %.0f rows/s", rate)
            if let rows, rate > 0, rows > job.progress.cursor {
                line += String(format: ", %.0f s left", Double(rows - job.progress.cursor) / rate)
            }
            line += ", \(job.progress.refused) refused"
            if terminal {
                FileHandle.standardError.write(Data("\r\(line)\u{1B}[K".utf8))
            } else if Date().timeIntervalSince(last) >= 5 || job.state.isFinal {
                FileHandle.standardError.write(Data("\(line)\n".utf8))
                last = Date()
            }
            if job.state.isFinal {
                if terminal { FileHandle.standardError.write(Data("\n".utf8)) }
                printJSON(JobReport.json(job))
                if job.state != .done { throw ExitCode(1) }
                // An import that refused every row imported nothing: it did not do its work
                // (review V, item 10), whatever its state says; the commonest reason is told.
                if job.kind == .import, job.progress.imported == 0, job.progress.refused > 0 {
                    var line = "cloak: every row (\(job.progress.refused)) was refused"
                    let seal = try? JobSeal(
                        job: job.id.text, binding: job.sealBinding,
                        wrappedKey: FileSeal.WrappedKey(keyID: job.keyID, sealed: job.wrappedKey), ring: ring)
                    if let seal,
                        let commonest = try? JobReport.refusals(job, store: store, seal: seal, limit: 1).reasons.first
                    {
                        line += "; the commonest reason (\(commonest.rows) rows): \(commonest.code) \(commonest.reason)"
                    }
                    FileHandle.standardError.write(Data((line + "\n").utf8))
                    throw ExitCode(1)
                }
                return
            }
            Thread.sleep(forTimeInterval: 0.5)
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "The store's jobs, newest first, one JSON line each.")
        @OptionGroup var options: ConfigOption
        @Option(help: "At most this many.") var limit = 100

        func run() throws {
            let (store, _) = try Jobs.store(options)
            do {
                for job in try store.jobs(before: nil, owner: nil, limit: max(1, min(limit, 10_000))) {
                    Jobs.printJSON(JobReport.json(job))
                }
            } catch {
                Keys.fail("cannot read the store: \(error)")
            }
        }
    }

    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "A job's state and counts (with --follow, its progress until it ends).")
        @OptionGroup var options: ConfigOption
        @Flag(help: "Follow the job to its end (exit 1 unless done).") var follow = false
        @Argument var id: String

        func run() throws {
            let (store, ring) = try Jobs.store(options)
            let job = Jobs.job(id, store)
            if follow { return try Jobs.follow(job.id, store: store, ring: ring) }
            Jobs.printJSON(Jobs.report(job, store: store, ring: ring))
        }
    }

    struct Cancel: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Stops a job after its batch under way; what it imported stays (resume goes on).",
            discussion: "A job still receiving its file fails instead, its input deleted: it could only import a part.")
        @OptionGroup var options: ConfigOption
        @Argument var id: String

        func run() throws {
            let (store, ring) = try Jobs.store(options)
            let job = Jobs.job(id, store)
            let ttl = Int64(try options.load(.jobs).jobs.outputTTLSeconds)
            do {
                let changed = try store.transaction {
                    try store.cancelJob(job.id, now: Tokens.now, expiresAt: Tokens.now + ttl)
                }
                guard changed != nil else { Keys.fail("job \(job.id) is \(job.state.rawValue): not changed") }
            } catch {
                Keys.fail("cannot change the job: \(error)")
            }
            Jobs.audit(.jobCancel, token: job.owner, store: store, ring: ring, [("job", job.id.text)])
            Jobs.printJSON(JobReport.json(Jobs.job(job.id.text, store)))
        }
    }

    struct Resume: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Queues a cancelled job again: it goes on from its cursor.")
        @OptionGroup var options: ConfigOption
        @Argument var id: String

        func run() throws {
            let (store, ring) = try Jobs.store(options)
            let job = Jobs.job(id, store)
            try Jobs.change(store, job, from: [.cancelled], to: .queued, expiresAt: nil)
            Jobs.audit(.jobResume, token: job.owner, store: store, ring: ring, [("job", job.id.text)])
        }
    }

    static func change(_ store: any AliasStore, _ job: StoredJob, from: Set<JobState>, to: JobState, expiresAt: Int64?)
        throws
    {
        do {
            let changed = try store.transaction {
                try store.setJobState(
                    job.id, from: from, to: to, holder: nil, now: Tokens.now, expiresAt: expiresAt, failure: nil)
            }
            guard changed else { Keys.fail("job \(job.id) is \(job.state.rawValue): not changed") }
        } catch {
            Keys.fail("cannot change the job: \(error)")
        }
        printJSON(JobReport.json(Self.job(job.id.text, store)))
    }

    struct Mapping: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Writes a done job's mapping file (a JSON line a row imported: row, id, aliases).")
        @OptionGroup var options: ConfigOption
        @Argument var id: String
        func run() throws { try Jobs.output(options, id, .mapping) }
    }

    struct Advice: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Writes a done job's advice file (a JSON line a row: row, id, ok or refused with code and reason).")
        @OptionGroup var options: ConfigOption
        @Argument var id: String
        func run() throws { try Jobs.output(options, id, .advice) }
    }

    static func output(_ options: ConfigOption, _ id: String, _ part: JobPart) throws {
        let (store, ring) = try Jobs.store(options)
        let job = Jobs.job(id, store)
        // Refused before anything is written, and audited before the first byte, as the API's
        // download is (review V, items 3 and 6).
        if let refusal = JobReport.outputRefusal(job, part) { Keys.fail(refusal) }
        do {
            try store.transaction {
                try CommandAudit.append(
                    [
                        Export.event(
                            .jobDownload, token: job.owner,
                            [("job", job.id.text), ("file", part.name), ("by", Tokens.actor)])
                    ],
                    keys: ring, to: store)
            }
        } catch {
            Keys.fail("the download's audit event could not be written, so nothing was: \(error)")
        }
        do {
            try JobReport.output(job, part, store: store, ring: ring) { FileHandle.standardOutput.write(Data($0)) }
        } catch {
            Keys.fail("\(error)")
        }
    }
}
