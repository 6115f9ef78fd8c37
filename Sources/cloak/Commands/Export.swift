import ArgumentParser
import CloakCore
import CloakCrypto
import CloakJobs
import CloakService
import CloakVault
import Foundation

/// `cloak export`: records out of the vault into a file encrypted to a recipient's OpenPGP
/// key, as a job another person approves (issue 60).
struct Export: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Ask for an export of records, encrypted to a recipient's OpenPGP public key.",
        discussion: """
            Acts for the token whose secret is in the environment variable CLOAK_TOKEN (it must \
            hold jobs:export and aliases:reveal). Selects --everything, records stored through a \
            --form, records whose metadata holds every --metadata pair, records with a \
            --classifier, or the aliases listed one a \
            line in --aliases FILE; never a VOLATILE record, an anonymous intent or a file. A node \
            serving this store counts the selection; the job then waits, for at most \
            jobs.approval_ttl_s, until a token of another person approves it (cloak jobs approve), \
            and is written, encrypted, into the store; cloak jobs file ID writes it out. Prints \
            the job's id, then (without --detach) its status once counted: the rows, the \
            selection's digest and the recipient's fingerprint the approver must confirm.
            """)
    @OptionGroup var options: ConfigOption
    @Flag(help: "Every record the export may take.") var everything = false
    @Option(help: "Records stored through this form (its submissions and cloak import --form).") var form: String?
    @Option(help: "Records whose metadata holds each pair: key=value,…") var metadata: String?
    @Option(help: "Records with this classifier.") var classifier: String?
    @Option(help: "A file of aliases, one a line.") var aliases: String?
    @Option(help: "The recipient's ASCII-armored OpenPGP public key (a file).") var recipient: String
    @Option(
        help: ArgumentHelp(
            "jsonl (default) or csv: a value a line, id (the record), alias, value, format, created_at; rows or "
                + "rows_csv: a group a line, each field by its name, cloak:group, cloak:metadata."))
    var layout = "jsonl"
    @Flag(help: "Print the job's id and return without waiting for the count.") var detach = false

    func validate() throws {
        let chosen = [everything, form != nil, metadata != nil, classifier != nil, aliases != nil].filter { $0 }.count
        guard chosen == 1 else {
            throw ValidationError("give one of --everything, --form, --metadata, --classifier and --aliases")
        }
        guard let chosen = ExportSpec.Layout(rawValue: layout) else {
            throw ValidationError("--layout is one of \(ExportSpec.Layout.names)")
        }
        if chosen.isRows, aliases != nil {
            throw ValidationError("a rows export takes --everything, --form, --metadata or --classifier, not --aliases")
        }
    }

    func run() throws {
        // Only what an export needs: no route's step secret (review V, item 10).
        let configuration = try options.load(.jobs)
        let (store, ring) = Tokens.storeAndRing(configuration)
        let token = Export.presented(options, configuration: configuration)
        guard token.scopes.contains(.jobsExport), token.scopes.contains(.aliasesReveal), let person = token.person
        else { Keys.fail("the token \(token.id) does not hold jobs:export and aliases:reveal as a person") }
        var listed: [[UInt8]] = []
        let selection: ExportSpec.Selection
        do {
            if let aliases {
                listed = try ExportIntake.aliases(Array(try Data(contentsOf: URL(fileURLWithPath: aliases))))
                selection = .aliases(Int64(listed.count))
            } else if let metadata {
                var pairs: [String: String] = [:]
                for pair in metadata.split(separator: ",") {
                    let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
                    guard parts.count == 2, !parts[0].isEmpty else { Keys.fail("--metadata is key=value,…") }
                    pairs[parts[0]] = parts[1]
                }
                guard !pairs.isEmpty else { Keys.fail("--metadata is key=value,…") }
                selection = .metadata(pairs)
            } else if let classifier {
                selection = .classifier(classifier)
            } else if let form {
                guard configuration.forms[form] != nil else {
                    Keys.fail("no form \(form) in the configuration")
                }
                selection = .form(form)
            } else {
                selection = .everything
            }
        } catch {
            Keys.fail("\(error)")
        }
        let key: [UInt8]
        do { key = Array(try Data(contentsOf: URL(fileURLWithPath: recipient))) } catch {
            Keys.fail("cannot read \(recipient)")
        }
        let fingerprint: String
        do throws(CloakError) { fingerprint = try ExportIntake.fingerprint(of: key) } catch {
            Keys.fail(error.message)
        }
        let spec = ExportSpec(
            selection: selection, layout: ExportSpec.Layout(rawValue: layout)!,
            recipient: String(decoding: key, as: UTF8.self), fingerprint: fingerprint, person: person)
        let now = Tokens.now
        let id = JobID.make(now: now)
        let job: StoredJob
        do {
            let seal = try JobSeal(
                newJob: id.text, binding: StoredJob.sealBinding(kind: .export, owner: token.id, spec: spec.encoded),
                ring: ring)
            job = try store.transaction {
                let job = try ExportIntake.store(
                    id: id, spec: spec, listed: listed, owner: token.id, seal: seal, now: now,
                    openLimit: configuration.jobs.maxOpenPerToken, in: store)
                try CommandAudit.append(
                    [
                        Export.event(
                            .jobExport, token: token.id,
                            [
                                ("job", id.text), ("requester_person", person), ("selection", spec.selectionText),
                                ("recipient", fingerprint),
                            ])
                    ], keys: ring, to: store)
                return job
            }
        } catch {
            Keys.fail("the export is refused; nothing was stored: \(error)")
        }
        FileHandle.standardOutput.write(Data("\(job.id.text)\n".utf8))
        if detach { return }
        // Until a node counted it.
        while true {
            let now = Jobs.job(id.text, store)
            if now.state != .queued && now.state != .running {
                Jobs.printJSON(Jobs.report(now, store: store, ring: ring))
                if now.state != .awaitingApproval { throw ExitCode(1) }
                return
            }
            Thread.sleep(forTimeInterval: 0.5)
        }
    }

    /// The token whose secret `CLOAK_TOKEN` holds, as the nodes honour it now; exit 2 otherwise.
    static func presented(_ options: ConfigOption, configuration: ServiceConfiguration)
        -> ServiceConfiguration.AccessToken
    {
        guard let secret = ProcessInfo.processInfo.environment["CLOAK_TOKEN"], !secret.isEmpty else {
            Keys.fail("set CLOAK_TOKEN to the secret of the token this command acts for")
        }
        // Read once; not handed on to the processes this one starts (GnuPG).
        unsetenv("CLOAK_TOKEN")
        let token: ServiceConfiguration.AccessToken?
        do {
            token = try Tokens.administration(options).presented(
                secret: secret, yaml: configuration.auth, now: Tokens.now)
        } catch {
            Keys.fail("cannot read the store's tokens: \(error)")
        }
        guard let token else { Keys.fail("CLOAK_TOKEN is not a token the nodes honour (unknown, revoked or expired)") }
        // Exports and their approvals do not judge access policies yet (issue 77).
        guard !token.isHeldToPolicies else {
            Keys.fail("the token \(token.id) is held to access policies, which exports do not apply yet")
        }
        return token
    }

    static func event(_ action: AuditAction, token: String, _ facts: [(String, String)]) -> AuditEvent.Draft {
        AuditEvent.Draft(
            at: Int64(Date().timeIntervalSince1970 * 1000), action: action, tokenID: token, client: "cli",
            result: .ok, facts: facts.map { AuditEvent.Fact.made($0.0, $0.1) })
    }
}

extension Jobs {
    /// A job's status, an export's with its counted selection and approval.
    static func report(_ job: StoredJob, store: any AliasStore, ring: KeyRing) -> JSONValue {
        guard job.kind == .export else { return JobReport.json(job) }
        let details = try? JobReport.exportDetails(
            job, store: store,
            seal: JobSeal(
                job: job.id.text, binding: job.sealBinding,
                wrappedKey: FileSeal.WrappedKey(keyID: job.keyID, sealed: job.wrappedKey), ring: ring))
        return JobReport.json(job, details: details)
    }

    struct Approve: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Approves another person's export, confirming the rows, fingerprint and digest its status shows.",
            discussion: """
                Acts for the token whose secret is in CLOAK_TOKEN: it must hold jobs:approve and be \
                of another person than the one who asked. --rows and --fingerprint must be the \
                job's, and so must --digest (its selection_digest; cloak jobs status ID shows them \
                all): an approval is of what was seen.
                """)
        @OptionGroup var options: ConfigOption
        @Option(help: "The job's counted rows, as its status shows them.") var rows: Int64
        @Option(help: "The recipient's fingerprint, as the job's status shows it.") var fingerprint: String
        @Option(help: "The selection's digest (selection_digest), as the job's status shows it.") var digest: String
        @Argument var id: String

        func run() throws {
            let configuration = try options.load(.jobs)
            let (store, ring) = Tokens.storeAndRing(configuration)
            let token = Export.presented(options, configuration: configuration)
            guard token.scopes.contains(.jobsApprove), let person = token.person else {
                Keys.fail("the token \(token.id) does not hold jobs:approve")
            }
            guard let jobID = JobID(id) else { Keys.fail("not a job id: \(id)") }
            let step = ExportApprovalStep(
                id: jobID, token: token.id, person: person, rows: rows,
                fingerprint: fingerprint.replacingOccurrences(of: " ", with: "").uppercased(),
                digest: digest.lowercased(), approvalTTL: Int64(configuration.jobs.approvalTTLSeconds),
                now: Tokens.now)
            do {
                try store.transaction {
                    let result = try step.run(in: store) { job in
                        try JobSeal(
                            job: job.id.text, binding: job.sealBinding,
                            wrappedKey: FileSeal.WrappedKey(keyID: job.keyID, sealed: job.wrappedKey), ring: ring)
                    }
                    switch result {
                    case let .failure(refusal): throw refusal  // rolled back
                    case let .success((job, spec, approval)):
                        try CommandAudit.append(
                            [
                                Export.event(
                                    .jobApprove, token: token.id, ExportApprovalStep.facts(job, spec, approval))
                            ],
                            keys: ring, to: store)
                    }
                }
            } catch let refusal as CloakError {
                Keys.fail(refusal.message)
            } catch {
                Keys.fail("cannot approve the job: \(error)")
            }
            Jobs.printJSON(Jobs.report(Jobs.job(id, store), store: store, ring: ring))
        }
    }

    struct File: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "file",
            abstract: "Writes a done export's file (OpenPGP, encrypted to its recipient) to standard output.")
        @OptionGroup var options: ConfigOption
        @Argument var id: String
        func run() throws { try Jobs.output(options, id, .export) }
    }
}
