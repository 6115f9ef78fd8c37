import CloakCore
import CloakHTTP
import CloakVault
import Dispatch

/// One form submission with files (issue 47), read from the request's body stream as it arrives.
///
/// Each file is sealed in chunks on the request's loop (``FileUpload``) and written by the vault
/// as it goes, at most ``queueLimit`` bytes of sealed chunks waiting: while they wait, the body
/// is not read, so a fast client is held back by TCP and a slow store bounds the memory, not the
/// other way round. A file over its field's size, or one file too many, is refused at once; so is
/// one whose first KiB shows an executable or a type its field does not allow, and one with an
/// executable's header anywhere past its start: nothing of a file is stored before its first KiB
/// is judged (issue 55, item 2), and a file whose whole content fits there is judged whole
/// first. When the body has ended and every chunk is stored, the whole submission is validated
/// (the text fields as for JSON, the files by ``FileFieldState``); only then are the files
/// finished into records. A refused or broken submission keeps nothing: its uploads' chunks are
/// deleted at once (``VaultClient/dropUpload(uploadID:)``).
///
/// The upload was admitted before its body is read (``UploadTicket``: its size charged to the
/// client's upload buckets, a share of the node's upload memory held until it is answered).
///
/// Touched only on the request's loop: the body stream's pieces and the vault client's
/// completions both arrive there.
final class FormUpload: @unchecked Sendable {
    /// Sealed bytes that may wait for the vault before the body is read further.
    static let queueLimit = 1 << 20

    /// A file whose body part has ended.
    private struct Received {
        let field: Int
        let uploadID: String
        /// Its size, type and verdict, without the bytes it read (``FileInspection/finished()``).
        let inspection: FileInspection
        let fingerprint: [UInt8]
        let chunkCount: Int
        let fileName: String?
    }

    /// A file being read.
    private struct Reading {
        let field: Int
        let upload: FileUpload
        var fileName: String?
        /// Whether its start went to the vault (its first KiB was judged, or it ended smaller).
        var stored = false
    }

    /// A write for the vault: an upload's start (with its first chunks), or more chunks.
    private struct Write {
        var start: StoredFile?
        let uploadID: String
        var chunks: [(index: Int, sealed: [UInt8])]
        var bytes: Int
    }

    /// Asks for the body's next piece (``BodyStream/next(_:)``, or a whole body's one).
    typealias Pull = @Sendable (@escaping @Sendable (BodyStream.Piece) -> Void) -> Void

    private let nextPiece: Pull
    private var reader: FormUploadReader
    private let form: FormSchema
    private let vault: VaultClient
    private let caller: AliasCaller
    private let today: CalendarDate
    private let answer: FormTokenizeHandler.Answer
    private let onOutcome: @Sendable (FileOutcome) -> Void
    private var finish: Reply.Finish?
    private let ticket: UploadTicket?
    /// Body bytes read so far (charged to the ticket as they pass what was declared).
    private var bodyBytes = 0
    /// Uploads whose start went to the vault: deleted if the submission fails.
    private var startedUploads: [String] = []

    private var reading: Reading?
    private var received: [Received] = []
    private var queue: [Write] = []
    private var queuedBytes = 0
    private var writing = false
    private var waitingForVault = false
    private var bodyEnded = false
    private var done = false

    /// What became of an upload, for metrics and the audit line.
    enum FileOutcome: Sendable {
        case stored(alias: String, bytes: Int)
        case refused
        case failed
    }

    init(
        next: @escaping Pull, reader: FormUploadReader, vault: VaultClient, caller: AliasCaller,
        today: CalendarDate, answer: FormTokenizeHandler.Answer, ticket: UploadTicket? = nil,
        onOutcome: @escaping @Sendable (FileOutcome) -> Void
    ) {
        self.ticket = ticket
        self.nextPiece = next
        self.reader = reader
        self.form = reader.form
        self.vault = vault
        self.caller = caller
        self.today = today
        self.answer = answer
        self.onOutcome = onOutcome
        self.loop = vault.loop
    }

    /// Reads the body and answers through `finish`, once.
    func start(_ finish: Reply.Finish) {
        self.finish = finish
        onThread { self.pull() }
    }

    /// Where every step runs: the request's loop (the body's pieces and the vault's completions
    /// arrive there already); in process, without a loop, a serial queue of this upload's own.
    private let loop: LoopHandle?
    private let serial = DispatchQueue(label: "cloak.form-upload")

    private func onThread(_ work: @escaping @Sendable () -> Void) {
        if let loop { loop.execute(work) } else { serial.async(execute: work) }
    }

    // MARK: Reading

    private func pull() {
        guard !done else { return }
        nextPiece { piece in self.onThread { self.received(piece) } }
    }

    private func received(_ piece: BodyStream.Piece) {
        guard !done else { return }
        switch piece {
        case .bytes(let bytes):
            do {
                bodyBytes += bytes.count
                try ticket?.received(bodyBytes)
                try reader.feed(bytes) { (event) throws(CloakError) in try self.handle(event) }
            } catch {
                return fail(error)
            }
            pump()
            if queuedBytes < Self.queueLimit { pull() } else { waitingForVault = true }
        case .end:
            bodyEnded = true
            complete()
        case .failed(let violation):
            if violation?.status == 413 {
                fail(CloakError(.payloadTooLarge, "the body is larger than the form's files allow"))
            } else {
                // The client left or stalled, or broke the framing: nothing of it is finished.
                fail(.malformed("the body could not be read whole"), outcome: .failed)
            }
        }
    }

    private func handle(_ event: FormUploadReader.Event) throws(CloakError) {
        switch event {
        case .fileBegin(let field, let fileName, _):
            let rules = form.fields[field].fileRules ?? FileRules()
            let count = received.filter { $0.field == field }.count
            guard count < rules.maxFiles else {
                throw Self.refusal(
                    form.fields[field].name, [FileValidationError.tooManyFiles], rules: rules, detected: [])
            }
            let upload: FileUpload
            do { upload = try vault.newUpload() } catch { throw error.cloakError { _ in "file" } }
            // Nothing goes to the vault before the file's first KiB is judged.
            reading = Reading(field: field, upload: upload, fileName: fileName)
        case .fileBytes(let bytes):
            guard var current = reading else { return }
            let chunks: [(index: Int, sealed: [UInt8])]
            do { chunks = try current.upload.feed(bytes) } catch {
                throw VaultError.unavailable("the file could not be sealed").cloakError { _ in "file" }
            }
            let rules = form.fields[current.field].fileRules ?? FileRules()
            let refused = current.upload.inspection.refusalSoFar(rules)
            if !refused.isEmpty {
                throw Self.refusal(
                    form.fields[current.field].name, refused, rules: rules,
                    detected: current.upload.inspection.detectedType.map { [$0] } ?? [])
            }
            let bytes = chunks.reduce(0) { $0 + $1.sealed.count }
            if !current.stored, current.upload.bytes >= FileSniffer.prefixLength {
                current.stored = true
                reading = current
                startedUploads.append(current.upload.uploadID)
                enqueue(
                    Write(
                        start: current.upload.started, uploadID: current.upload.uploadID, chunks: chunks, bytes: bytes))
            } else if !chunks.isEmpty {
                enqueue(Write(start: nil, uploadID: current.upload.uploadID, chunks: chunks, bytes: bytes))
            }
        case .fileEnd(let fileName, _):
            guard let current = reading else { return }
            reading = nil
            let end:
                (last: (index: Int, sealed: [UInt8]), inspection: FileInspection, fingerprint: [UInt8], chunkCount: Int)
            do { end = try current.upload.finish() } catch {
                throw VaultError.unavailable("the file could not be sealed").cloakError { _ in "file" }
            }
            // The last chunk is written like the others; the upload is finished only at the end.
            // A file smaller than the first KiB is judged whole first: refused, it is not stored
            // (the submission's validation names it with the other fields' errors).
            if current.stored {
                enqueue(
                    Write(
                        start: nil, uploadID: current.upload.uploadID, chunks: [end.last],
                        bytes: end.last.sealed.count))
            } else if end.inspection.verdict(form.fields[current.field].fileRules ?? FileRules()).isEmpty {
                startedUploads.append(current.upload.uploadID)
                enqueue(
                    Write(
                        start: current.upload.started, uploadID: current.upload.uploadID, chunks: [end.last],
                        bytes: end.last.sealed.count))
            }
            received.append(
                Received(
                    field: current.field, uploadID: current.upload.uploadID, inspection: end.inspection.finished(),
                    fingerprint: end.fingerprint, chunkCount: end.chunkCount,
                    fileName: Self.safeName(fileName ?? current.fileName)))
        }
    }

    // MARK: Writing

    private func enqueue(_ write: Write) {
        queuedBytes += write.bytes
        // Chunks join the upload's write still waiting, when there is one.
        if write.start == nil, let lastIndex = queue.indices.last, queue[lastIndex].uploadID == write.uploadID,
            !(writing && lastIndex == 0)
        {
            queue[lastIndex].chunks += write.chunks
            queue[lastIndex].bytes += write.bytes
            return
        }
        queue.append(write)
    }

    private func pump() {
        guard !writing, !done, let write = queue.first else { return }
        writing = true
        let written: @Sendable (Result<Void, VaultError>) -> Void = { result in self.onThread { self.written(result) } }
        if let start = write.start {
            vault.startUpload(start, chunks: write.chunks, completion: written)
        } else {
            vault.storeChunks(uploadID: write.uploadID, write.chunks, completion: written)
        }
    }

    private func written(_ result: Result<Void, VaultError>) {
        writing = false
        guard !done else { return dropUploads() }
        if case .failure(let error) = result { return fail(error.cloakError { _ in "file" }) }
        queuedBytes -= queue.removeFirst().bytes
        pump()
        if waitingForVault && queuedBytes < Self.queueLimit {
            waitingForVault = false
            pull()
        }
        complete()
    }

    // MARK: Finishing

    /// Once the body has ended and every chunk is stored: validates, then finishes the files.
    private func complete() {
        guard bodyEnded, queue.isEmpty, !writing, !done else { return }
        let collect: CollectRequest
        let validation: FormValidation
        let submission: FormSubmission
        do throws(CloakError) {
            collect = try reader.finish()
            var rules = ValidationContext(today: today)
            rules.bins = vault.bins  // a card field's accept rule holds here too
            var files: [Int: [FileInspection]] = [:]
            for file in received { files[file.field, default: []].append(file.inspection) }
            validation = FormValidation(
                form: form, values: collect.values, files: files, context: rules)
            if let error = validation.inputError { throw error }
            submission = FormSubmission(validation, keepSensitiveRaw: answer == .mappedBody)
            do { try Vault.check(submission.requests, caller: caller) } catch {
                throw error.cloakError { "field \(submission.key(ofRequest: $0))" }
            }
        } catch {
            return fail(error)
        }
        // Every charge first (the files', then the values' as they are stored), so a refusal
        // comes before any file is a record; the files last, once the values are stored.
        if let refusal = vault.admitFiles(received.count, caller: caller) {
            return fail(refusal.cloakError { _ in "file" })
        }
        submission.resolve(with: vault, caller: caller) { result in
            self.onThread {
                switch result {
                case .failure(let error): self.fail(error)
                case .success(let resolved):
                    self.finishFiles(from: 0, aliases: [], intentExpiresAt: resolved.intentExpiresAt) {
                        fileEntries, intentExpiresAt in
                        self.succeed(
                            resolved.entries + fileEntries, submission: submission, collect: collect,
                            intentExpiresAt: intentExpiresAt)
                    }
                }
            }
        }
    }

    /// Finishes the files one after the other; `then` gets each file's entry (its field's
    /// name, or `name[i]` for a field holding several).
    private func finishFiles(
        from index: Int, aliases: [(key: String, value: String)], intentExpiresAt: Int64?,
        then: @escaping @Sendable ([(key: String, value: String)], Int64?) -> Void
    ) {
        guard index < received.count else { return then(aliases, intentExpiresAt) }
        let file = received[index]
        let name = form.fields[file.field].name
        let several = (form.fields[file.field].fileRules?.maxFiles ?? 1) > 1
        let position = received[..<index].filter { $0.field == file.field }.count
        // Validation passed: the content's type is known and allowed.
        guard let mediaType = file.inspection.mediaType else {
            return fail(
                Self.refusal(
                    name, [FileValidationError.typeNotAllowed], rules: form.fields[file.field].fileRules ?? FileRules(),
                    detected: file.inspection.detectedType.map { [$0] } ?? []))
        }
        let metadata = Vault.FileMetadata(
            fileName: file.fileName, mediaType: mediaType, bytes: file.inspection.bytes, uploadID: file.uploadID)
        vault.finishUpload(
            uploadID: file.uploadID, chunkCount: file.chunkCount, fingerprint: file.fingerprint,
            metadata: metadata, ttlSeconds: form.fields[file.field].retentionSeconds, caller: caller
        ) { result in
            self.onThread {
                self.finished(
                    result, index: index, key: several ? "\(name)[\(position)]" : name, aliases: aliases,
                    intentExpiresAt: intentExpiresAt, then: then)
            }
        }
    }

    /// File `index` finished into its record (or failed): the next one, or `then`.
    private func finished(
        _ result: Result<RevealedRecord, VaultError>, index: Int, key: String,
        aliases: [(key: String, value: String)], intentExpiresAt: Int64?,
        then: @escaping @Sendable ([(key: String, value: String)], Int64?) -> Void
    ) {
        let file = received[index]
        switch result {
        case .failure(let error):
            fail(error.cloakError { _ in "field \(form.fields[file.field].name)" })
        case .success(let record):
            guard let alias = record.aliases.first?.alias else {
                return fail(.storeUnavailable("no alias was made for the file"))
            }
            onOutcome(.stored(alias: alias, bytes: file.inspection.bytes))
            // An anonymous caller's file is an intent: its expiry goes in the header too.
            let expiry = record.intent ? [intentExpiresAt, record.expiresAt].compactMap { $0 }.min() : intentExpiresAt
            finishFiles(from: index + 1, aliases: aliases + [(key, alias)], intentExpiresAt: expiry, then: then)
        }
    }

    private func succeed(
        _ entries: [(key: String, value: String)], submission: FormSubmission, collect: CollectRequest,
        intentExpiresAt: Int64?
    ) {
        guard !done, let finish else { return }
        done = true
        ticket?.release()
        startedUploads = []
        let headers = intentExpiresAt.map { [("Cloak-Intent-Expires", RevealedRecord.iso8601($0))] } ?? []
        switch answer {
        case .flatResult:
            finish(.json(200, .object(FormTokenizeHandler.flat(entries, aliasKeys: submission)), headers: headers))
        case .mappedBody:
            let body = FieldNameMapper.body(
                entries.map { (name: $0.key, value: JSONValue.string($0.value)) }, extraData: collect.extraData,
                policy: collect.mappingPolicy ?? form.mappingPolicy)
            finish(.json(200, body, headers: headers))
        }
    }

    /// Answers `error`; every file of the submission counts as `outcome` (by default refused
    /// for the client's mistakes, failed for Cloak's).
    private func fail(_ error: CloakError, outcome: FileOutcome? = nil) {
        guard !done, let finish else { return }
        done = true
        ticket?.release()
        let clients: Set<CloakError.Code> = [.inputDataIsNotValid, .malformedRequest, .payloadTooLarge]
        onOutcome(outcome ?? (clients.contains(error.code) ? .refused : .failed))
        finish(.error(error))
        if !writing { dropUploads() }
    }

    /// Deletes the chunks of every upload the failed submission started (a finished one is
    /// not touched), once no write of its own is in flight: the drop then follows it.
    private func dropUploads() {
        let uploads = startedUploads
        startedUploads = []
        for uploadID in uploads { vault.dropUpload(uploadID: uploadID) }
    }

    /// A 1001 naming one file field and its errors, as ``FormValidation/inputError`` shapes it,
    /// with the field's limits and what the file was found to be (`extraInfo.fileLimits`), in
    /// the description too.
    static func refusal(_ field: String, _ errors: [String], rules: FileRules, detected: [String]) -> CloakError {
        var why: [String] = []
        if errors.contains(FileValidationError.tooLarge) { why.append("a file is over max_bytes \(rules.maxBytes)") }
        if errors.contains(FileValidationError.tooManyFiles) { why.append("more than max_files \(rules.maxFiles)") }
        if errors.contains(FileValidationError.typeNotAllowed) || errors.contains(FileValidationError.executable) {
            why.append(
                "the content is \(detected.first ?? "of no known type"); the field takes "
                    + rules.types.map(\.rawValue).joined(separator: ", "))
        }
        return CloakError(
            .inputDataIsNotValid,
            "Input data is not valid" + (why.isEmpty ? "" : " (\(field): \(why.joined(separator: "; ")))"),
            extraInfo: [
                ("VGSSDKErrorInputDataRequiredValid", .strings([field])),
                ("validationErrors", .object([(field, .strings(errors))])),
                ("fileLimits", .object([(field, rules.refusalFacts(detected: detected))])),
            ])
    }

    /// A client's file name as kept in the record: its last path component, without control
    /// characters, at most 255 bytes (nil when nothing is left).
    static func safeName(_ name: String?) -> String? {
        guard let name else { return nil }
        let last = name.split(whereSeparator: { $0 == "/" || $0 == "\\" }).last.map(String.init) ?? ""
        var kept = String(String.UnicodeScalarView(last.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7F }))
        while kept.utf8.count > 255 { kept.removeLast() }
        return kept.isEmpty ? nil : kept
    }
}
