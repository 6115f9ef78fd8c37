import CloakCore
import CloakCrypto
import CloakHTTP
import CloakJobs
import CloakVault
import Dispatch
import Foundation

/// Export jobs over the API (issue 60): `POST /admin/jobs/exports` (scope `jobs:export`) asks
/// for one, `POST /admin/jobs/{id}/approve` (scope `jobs:approve`, another person) approves it
/// after its status showed the selection, the row count and the recipient's fingerprint, and
/// `GET /admin/jobs/{id}/export` gives the requester the encrypted file once written.
extension AdminJobsHandler {
    /// The most aliases a request's list may name (a longer list: `cloak export --aliases`).
    static let maxListedInRequest = 10_000

    /// `{"selection": {"everything": true} | {"form": "…"} | {"metadata": {…}} | {"classifier": "…"} |
    /// {"aliases": ["…"]}, "layout"?: "jsonl" | "csv" | "rows" | "rows_csv", "recipient": "<armored public key>"}`
    /// → 202 with the queued job (counted next, then awaiting approval).
    func export(_ request: HTTPRequest) throws(CloakError) -> Reply {
        guard case let .object(members) = try request.jsonBody() else {
            throw .malformed("the body must be a JSON object")
        }
        var selection: ExportSpec.Selection?
        var listed: [[UInt8]] = []
        var layout = ExportSpec.Layout.jsonl
        var recipient: String?
        for (key, value) in members {
            switch key {
            case "selection":
                if case let .object(inner) = value, inner.count == 1, inner[0].key == "aliases" {
                    guard case let .array(items) = inner[0].value, items.count <= Self.maxListedInRequest else {
                        throw .malformed(
                            "selection.aliases must be an array of at most \(Self.maxListedInRequest) aliases")
                    }
                    let texts = items.compactMap(\.stringValue)
                    guard texts.count == items.count else { throw .malformed("selection.aliases must be strings") }
                    listed = try ExportIntake.aliases(Array(texts.joined(separator: "\n").utf8))
                    guard listed.count == items.count else { throw .malformed("selection.aliases holds a blank alias") }
                    selection = .aliases(Int64(listed.count))
                } else {
                    guard let chosen = ExportSpec.selection(value) else {
                        throw .malformed(
                            #"selection must be one of {"everything":true}, {"form":"…"}, {"metadata":{…}}, {"classifier":"…"}, {"aliases":[…]}"#
                        )
                    }
                    if case .aliases = chosen { throw .malformed("selection.aliases must be an array of aliases") }
                    if case let .form(name) = chosen, configuration.forms[name] == nil {
                        throw .malformed(
                            "selection.form: no form \(Redaction.scrub(name, limit: 64)) in the configuration")
                    }
                    selection = chosen
                }
            case "layout":
                guard let chosen = value.stringValue.flatMap(ExportSpec.Layout.init(rawValue:)) else {
                    throw .malformed("layout is one of \(ExportSpec.Layout.names)")
                }
                layout = chosen
            case "recipient":
                guard let text = value.stringValue else { throw .malformed("recipient must be an armored public key") }
                recipient = text
            default:
                throw .malformed(
                    "unknown member \"\(Redaction.scrub(key, limit: 64))\"; expected selection, layout, recipient")
            }
        }
        guard let selection, let recipient else { throw .malformed("the body needs selection and recipient") }
        try ExportSpec.check(selection, layout: layout)
        guard caller.scopes.contains(.aliasesReveal), let person = caller.person else {
            throw CloakError(.forbidden, "an export reveals: its token needs aliases:reveal and a person")
        }
        let (vault, owner, now, outcome, chosen, aliases) = (
            self.vault, self.owner, self.now, self.outcome, layout, listed
        )
        let openLimit = configuration.jobs.maxOpenPerToken
        return .later { finish in
            // GnuPG reads the key in a process of its own: never on a loop.
            ExportIntake.keyQueue.async {
                let fingerprint: String
                do throws(CloakError) { fingerprint = try ExportIntake.fingerprint(of: Array(recipient.utf8)) } catch {
                    outcome?.alias(nil, .refused, facts: [("reason", "recipient")])
                    return finish(.error(error))
                }
                let spec = ExportSpec(
                    selection: selection, layout: chosen, recipient: recipient, fingerprint: fingerprint, person: person
                )
                let id = JobID.make(now: now)
                let seal: JobSeal
                do throws(VaultError) {
                    seal = try vault.vault.newJobSeal(
                        id, binding: StoredJob.sealBinding(kind: .export, owner: owner, spec: spec.encoded))
                } catch {
                    return finish(.error(error.cloakError { _ in "job" }))
                }
                vault.vault.withStore(reads: false) { store in
                    try ExportIntake.store(
                        id: id, spec: spec, listed: aliases, owner: owner, seal: seal, now: now, openLimit: openLimit,
                        in: store)
                } completion: { result in
                    let job: StoredJob
                    switch result {
                    case let .success(stored): job = stored
                    case let .failure(refusal as CloakError): return finish(.error(refusal))
                    case .failure: return finish(.error(.storeUnavailable("the job could not be stored")))
                    }
                    outcome?.alias(
                        nil, .ok,
                        facts: [
                            ("job", id.text), ("requester_person", person), ("selection", spec.selectionText),
                            ("recipient", fingerprint),
                        ])
                    finish(.json(202, JobReport.json(job), headers: HTTPResponse.noStoreHeaders))
                }
            }
        }
    }

    /// `POST /admin/jobs/{id}/approve` with `{"rows": N, "fingerprint": "…", "selection_digest":
    /// "…"}`, the row count, recipient and digest the job's status showed: 200 with the job,
    /// queued to be written. Refused for
    /// the requester's own person (403), a job not awaiting approval or past its
    /// `jobs.approval_ttl_s` (400), and a count or fingerprint that is not the job's (400: the
    /// approver did not see what they approve).
    func approve(_ id: String, _ request: HTTPRequest) throws(CloakError) -> Reply {
        let id = try Self.jobID(id)
        guard case let .object(members) = try request.jsonBody() else {
            throw .malformed(#"the body must be {"rows": N, "fingerprint": "…"}"#)
        }
        var rows: Int64?
        var fingerprint: String?
        var digest: String?
        for (key, value) in members {
            switch key {
            case "rows":
                guard case let .number(text) = value, let n = Int64(text), n >= 0 else {
                    throw .malformed("rows must be the job's row count")
                }
                rows = n
            case "fingerprint":
                guard let text = value.stringValue else { throw .malformed("fingerprint must be a string") }
                fingerprint = text.replacingOccurrences(of: " ", with: "").uppercased()
            case "selection_digest":
                guard let text = value.stringValue else { throw .malformed("selection_digest must be a string") }
                digest = text.lowercased()
            default:
                throw .malformed(
                    "unknown member \"\(Redaction.scrub(key, limit: 64))\"; expected rows, fingerprint, selection_digest"
                )
            }
        }
        guard let rows, let fingerprint, let digest else {
            throw .malformed("the body needs rows, fingerprint and selection_digest")
        }
        guard let person = caller.person else {
            throw CloakError(.forbidden, "an approval is a person's: the token names none")
        }
        let (vault, token, now, outcome) = (self.vault, caller.id, self.now, self.outcome)
        let ttl = Int64(configuration.jobs.approvalTTLSeconds)
        return .later { finish in
            vault.vault.withStore(reads: false) {
                store -> Result<(StoredJob, ExportSpec, ExportApproval), CloakError> in
                try ExportApprovalStep(
                    id: id, token: token, person: person, rows: rows, fingerprint: fingerprint, digest: digest,
                    approvalTTL: ttl, now: now
                ).run(in: store, seal: { try vault.vault.jobSeal($0) })
            } completion: { result in
                switch result {
                case .failure: finish(.error(.storeUnavailable("the store could not be read")))
                case let .success(.failure(refusal)):
                    outcome?.alias(nil, .refused, facts: [("job", id.text)])
                    finish(.error(refusal))
                case let .success(.success((job, spec, approval))):
                    outcome?.alias(nil, .ok, facts: ExportApprovalStep.facts(job, spec, approval))
                    finish(.json(200, JobReport.json(job), headers: HTTPResponse.noStoreHeaders))
                }
            }
        }
    }
}
