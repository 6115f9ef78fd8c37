import CloakCore
import CloakHTTP
import CloakVault
import Dispatch

/// The end of an upload: the submission validated once the body has ended and every chunk is
/// stored, its files finished into records one after the other, and the answer (or the
/// failure, after which what was started is deleted).
extension FormUpload {
    // MARK: Finishing

    /// Once the body has ended and every chunk is stored: validates, then finishes the files.
    func complete() {
        guard !state.isDone else { return }
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
    func finishFiles(
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
    func finished(
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

    func succeed(
        _ entries: [(key: String, value: String)], submission: FormSubmission, collect: CollectRequest,
        intentExpiresAt: Int64?
    ) {
        guard !state.isDone, let finish else { return }
        _ = state.finish(failed: false)
        ticket?.release()
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
    func fail(_ error: CloakError, outcome: FileOutcome? = nil) {
        guard !state.isDone, let finish else { return }
        let started = state.finish(failed: true)
        ticket?.release()
        let clients: Set<CloakError.Code> = [.inputDataIsNotValid, .malformedRequest, .payloadTooLarge]
        onOutcome(outcome ?? (clients.contains(error.code) ? .refused : .failed))
        finish(.error(error))
        drop(started)
    }

    /// Deletes the chunks of uploads the failed submission started (a finished one is not
    /// touched; one with a write in flight once it has ended: ``FormUploadState/finish(failed:)``).
    func drop(_ uploads: [String]) {
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
