import CloakCore
import CloakCrypto
import CloakHTTP
import CloakJobs
import CloakVault
import Foundation
import Synchronization

/// The jobs API (issue 60): with `jobs:import`, start an import with the file as the body and
/// download a done import's mapping and advice files; with `jobs:export`, ask for an export and
/// download it once approved and written (``AdminJobsHandler+Export``); with either, list and
/// follow one's own jobs, cancel and resume them. A token sees only the jobs it started
/// (another's answers 404, as one that does not exist), except that a `jobs:approve` token sees
/// every export, to approve another person's.
struct AdminJobsHandler: Sendable {
    let vault: VaultClient
    let configuration: ServiceConfiguration
    let owner: String
    /// The calling token.
    let caller: ServiceConfiguration.AccessToken
    /// The caller holds `aliases:create` too (an import needs it).
    let mayCreate: Bool
    let outcome: Outcome?
    let now: Int64
    /// The node's tallies of imports' refusals.
    let refusalTallies: JobRefusals

    static let importParameters: Set<String> = ["form", "format", "layout", "map", "ignore_columns", "file"]

    /// `POST /admin/jobs/imports?form=NAME|format=FMT[&layout=csv|jsonl][&map=…][&ignore_columns=…][&file=NAME]`
    /// with the file as the body → 202 with the queued job.
    func start(_ request: HTTPRequest) throws(CloakError) -> Reply {
        var form: String?
        var format: String?
        var layout = ImportSpec.Layout.csv
        var map: String?
        var ignored: [String] = []
        var file: String?
        for (name, value) in try StrictQuery.pairs(request.query, known: Self.importParameters) {
            switch name {
            case "form": form = value
            case "format":
                guard AliasFormatName(rawValue: value) != nil else { throw .malformed("no alias format \(value)") }
                format = value
            case "layout":
                guard let chosen = ImportSpec.Layout(rawValue: value) else {
                    throw .malformed("layout is csv or jsonl")
                }
                layout = chosen
            case "map": map = value
            case "ignore_columns": ignored = value.split(separator: ",").map(String.init)
            default:
                guard value.utf8.count <= 255 else { throw .malformed("file names at most 255 bytes") }
                file = value
            }
        }
        guard (form == nil) != (format == nil) else { throw .malformed("give one of form and format") }
        guard mayCreate else {
            throw CloakError(.forbidden, "an import creates aliases: its token needs aliases:create beside jobs:import")
        }
        let spec = ImportSpec(
            source: form.map { .form($0) } ?? .format(AliasFormatName(rawValue: format!)!), layout: layout, map: map,
            ignored: ignored, fileName: file)
        let plan = try ImportPlan(spec, forms: configuration.forms)
        let id = JobID.make(now: now)
        let seal: JobSeal
        do {
            seal = try vault.vault.newJobSeal(
                id, binding: StoredJob.sealBinding(kind: .import, owner: owner, spec: spec.encoded))
        } catch {
            throw error.cloakError { _ in "job" }
        }
        let job = StoredJob(
            id: id, kind: .import, state: .receiving, spec: spec.encoded, owner: owner, keyID: seal.wrappedKey.keyID,
            wrappedKey: seal.wrappedKey.sealed, createdAt: now)
        let input = JobInput(id: id, seal: seal, plan: plan)
        let pull: JobUpload.Pull
        if let stream = request.bodyStream {
            pull = { stream.next($0) }
        } else {
            // A whole body (a request made in process): one piece.
            let pieces = Mutex<[BodyStream.Piece]>([.bytes(request.body), .end])
            pull = { receive in receive(pieces.withLock { $0.count > 1 ? $0.removeFirst() : $0[0] }) }
        }
        let upload = JobUpload(
            vault: vault, job: job, input: input, maxBytes: configuration.jobs.maxInputMiB << 20,
            openLimit: configuration.jobs.maxOpenPerToken, gnupgHome: configuration.jobs.gnupgHome,
            receivingSeconds: configuration.jobs.receivingIdleSeconds, outcome: outcome, next: pull)
        return .later { finish in upload.start(finish) }
    }

    /// `GET /admin/jobs[?before=ID][&limit=N]` → 200 `{"data": [job…], "next": ID | null}`, newest first.
    func list(_ request: HTTPRequest) throws(CloakError) -> Reply {
        var before: JobID?
        var limit = 100
        for (name, value) in try StrictQuery.pairs(request.query, known: ["before", "limit"]) {
            if name == "before" {
                guard let id = JobID(value) else { throw .malformed("before is a job id") }
                before = id
            } else {
                guard let n = Int(value), (1...1000).contains(n) else { throw .malformed("limit is 1 to 1000") }
                limit = n
            }
        }
        let (caller, after, count) = (self.caller, before, limit)
        let approves = caller.scopes.contains(.jobsApprove) || caller.scopes.contains(.jobsRead)
        return .later { finish in
            vault.vault.withStore(reads: true) { store in
                // An approver's (or a reader's) page is filtered here, from every job (a table that ends and
                // expires its rows: bounded), so `next` names only a job it sees.
                try store.jobs(before: after, owner: approves ? nil : caller.id, limit: approves ? 10_000 : count)
            } completion: { result in
                guard case let .success(jobs) = result else {
                    return finish(.error(.storeUnavailable("the store could not be read")))
                }
                let seen = jobs.filter { Self.sees($0, caller: caller) }
                let visible = Array(seen.prefix(count))
                let next: JSONValue =
                    seen.count > count || (!approves && jobs.count == count)
                    ? .string(visible.last!.id.text) : .null
                finish(
                    .json(
                        200,
                        .object([
                            ("data", .array(visible.map { JobReport.json($0, forReader: Self.onlyReads($0, caller)) })),
                            ("next", next),
                        ]),
                        headers: HTTPResponse.noStoreHeaders))
            }
        }
    }

    /// `GET /admin/jobs/{id}`: an export's with its counted selection and its approval.
    func status(_ id: String) throws(CloakError) -> Reply {
        let id = try Self.jobID(id)
        let (vault, caller) = (self.vault, self.caller)
        return find(id) { job, finish in
            guard job.kind == .export else {
                return finish(
                    .json(
                        200, JobReport.json(job, forReader: Self.onlyReads(job, caller)),
                        headers: HTTPResponse.noStoreHeaders))
            }
            vault.vault.withStore(reads: true) { store in
                try JobReport.exportDetails(job, store: store, seal: try vault.vault.jobSeal(job))
            } completion: { result in
                guard case let .success(details) = result else {
                    return finish(.error(.storeUnavailable("the job's selection could not be read")))
                }
                finish(
                    .json(
                        200, JobReport.json(job, details: details, forReader: Self.onlyReads(job, caller)),
                        headers: HTTPResponse.noStoreHeaders))
            }
        }
    }

    /// `GET /admin/jobs/{id}/refusals` → 200 `{"data": [{"code", "reason", "rows"}…], "other_rows": N}`:
    /// an import's refusals by reason as far as it went, the commonest first (the Jobs page's
    /// advice; never a value or a row id, which stay in the owner's advice file). An export: 404.
    func refusals(_ id: String) throws(CloakError) -> Reply {
        let id = try Self.jobID(id)
        let (vault, tallies, caller) = (self.vault, self.refusalTallies, self.caller)
        return find(id) { job, finish in
            guard job.kind == .import else {
                return finish(.error(.notFound("the job is an export: it refuses no rows")))
            }
            let seal: JobSeal
            do throws(VaultError) { seal = try vault.vault.jobSeal(job) } catch {
                return finish(.error(error.cloakError { _ in "job" }))
            }
            tallies.count(job, seal: seal, vault: vault) { result in
                switch result {
                case let .failure(error): finish(.error(error))
                case var .success(found):
                    // A reason may quote the file (a column's name): a reader is not told it.
                    if Self.onlyReads(job, caller) { found.reasons = JobReport.forReaders(found.reasons) }
                    finish(
                        .json(
                            200, JobReport.refusalsJSON(found.reasons, otherRows: found.otherRows),
                            headers: HTTPResponse.noStoreHeaders))
                }
            }
        }
    }

    /// Whether `caller` sees `job`'s report: its own (``owns(_:caller:)``), with `jobs:approve`
    /// every export, and with `jobs:read` every job.
    static func sees(_ job: StoredJob, caller: ServiceConfiguration.AccessToken) -> Bool {
        owns(job, caller: caller) || caller.scopes.contains(.jobsRead)
            || (job.kind == .export && caller.scopes.contains(.jobsApprove))
    }

    /// Whether `caller` sees `job` only through `jobs:read`: neither its owner nor, for an
    /// export, its approver. Such a reader is not told the caller text a job carries.
    static func onlyReads(_ job: StoredJob, _ caller: ServiceConfiguration.AccessToken) -> Bool {
        !owns(job, caller: caller) && !(job.kind == .export && caller.scopes.contains(.jobsApprove))
    }

    /// Whether `job` is `caller`'s: it started it (an export only while the token is still the
    /// person who asked: an id given again to another person's token does not inherit it). Only
    /// the owner cancels, resumes or downloads a job's files, whatever else it may read.
    static func owns(_ job: StoredJob, caller: ServiceConfiguration.AccessToken) -> Bool {
        guard job.owner == caller.id else { return false }
        return job.kind != .export || ExportSpec(stored: job.spec)?.person == caller.person
    }

    /// `POST /admin/jobs/{id}/cancel` (the batch under way may still commit) and `/resume` (a
    /// cancelled job goes on from its cursor) → 200 with the job.
    func change(_ id: String, to state: JobState) throws(CloakError) -> Reply {
        let id = try Self.jobID(id)
        let from: Set<JobState> =
            state == .cancelled ? [.receiving, .queued, .running, .awaitingApproval] : [.cancelled]
        let expires = state == .cancelled ? now + Int64(configuration.jobs.outputTTLSeconds) : nil
        let (caller, now, outcome) = (self.caller, self.now, self.outcome)
        return .later { finish in
            vault.vault.withStore(reads: false) { store -> (job: StoredJob, changed: Bool)? in
                guard let job = try store.job(id), Self.owns(job, caller: caller) else {
                    return nil
                }
                let changed: Bool
                if state == .cancelled {
                    changed = try store.cancelJob(id, now: now, expiresAt: expires ?? now) != nil
                } else {
                    changed = try store.setJobState(
                        id, from: from, to: state, holder: nil, now: now, expiresAt: expires, failure: nil)
                }
                return (try store.job(id) ?? job, changed)
            } completion: { result in
                switch result {
                case .failure: finish(.error(.storeUnavailable("the store could not be read")))
                case .success(nil): finish(.error(.notFound("no such job")))
                case let .success(found?):
                    let job = found.job
                    guard found.changed else {
                        outcome?.alias(nil, .refused, facts: [("job", id.text)])
                        return finish(.error(.malformed("the job is \(job.state.rawValue): not changed")))
                    }
                    outcome?.alias(nil, .ok, facts: [("job", id.text)])
                    finish(.json(200, JobReport.json(job), headers: HTTPResponse.noStoreHeaders))
                }
            }
        }
    }
}
