import CloakCore
import CloakHTTP
import CloakVault
import Synchronization

/// `POST /forms/{form}/tokens` (Vault API v1), `POST /forms/{form}/aliases` (v2, scope
/// `aliases:create`) and `POST /forms/{form}/send` (the redacted echo): validate, alias every
/// field with tokenization, then answer the SDK's flat result or the body an upstream would get.
struct FormTokenizeHandler: Sendable {
    enum Answer: Sendable {
        /// `{fieldName: alias or raw}`; a raw value wins on a key clash (SDK deepMerge).
        case flatResult
        /// The body built by the mapping policy and merged with `extraData`.
        case mappedBody
    }

    let context: ServiceContext
    let vault: VaultClient
    let identity: Identity
    /// Told what became of each uploaded file (metrics, audit).
    var onFileOutcome: @Sendable (FormUpload.FileOutcome) -> Void = { _ in }
    /// Admits an upload before its body is read (``UploadAdmission``): `Content-Length`, if
    /// the request declares one. Nil: not limited (requests made in process).
    var admitUpload: (@Sendable (Int?) throws(CloakError) -> UploadTicket)? = nil

    func handle(_ request: HTTPRequest, form name: String, requiresToken: Bool, answer: Answer) throws(CloakError)
        -> Reply
    {
        let caller = try identity.aliasCaller(
            openTokenize: context.configuration.openTokenize, requiresToken: requiresToken)
        if let stream = request.bodyStream {
            return try upload(request, form: name, caller: caller, answer: answer) { stream.next($0) }
        }
        if let form = context.configuration.forms[name], form.hasFileFields {
            // A whole body (a request made in process): read as one piece.
            let pieces = Mutex<[BodyStream.Piece]>([.bytes(request.body), .end])
            return try upload(request, form: name, caller: caller, answer: answer) { receive in
                receive(pieces.withLock { $0.count > 1 ? $0.removeFirst() : $0[0] })
            }
        }
        let prepared = try PreparedSubmission(
            request, form: name, context: context, caller: caller,
            keepSensitiveRaw: answer == .mappedBody, bins: vault.bins)
        return .later { finish in
            prepared.resolve(with: vault, failing: finish) { entries, intentExpiresAt in
                // The SDK's flat answer has no room for it: an intent's expiry goes in a header.
                let headers = intentExpiresAt.map { [("Cloak-Intent-Expires", RevealedRecord.iso8601($0))] } ?? []
                switch answer {
                case .flatResult:
                    finish(.json(200, .object(Self.flat(entries, aliasKeys: prepared.submission)), headers: headers))
                case .mappedBody: finish(.json(200, prepared.body(entries), headers: headers))
                }
            }
        }
    }

    /// A form with file fields: its body streamed through a ``FormUpload``. A caller without a
    /// token may send multipart only with `Cloak-Upload: 1`, a header a plain HTML form of
    /// another site cannot set (a JSON body is safe already: it needs a CORS preflight).
    private func upload(
        _ request: HTTPRequest, form name: String, caller: AliasCaller, answer: Answer,
        next: @escaping FormUpload.Pull
    ) throws(CloakError) -> Reply {
        guard let form = context.configuration.forms[name] else { throw .notFound("no such form") }
        let reader = try FormUploadReader(
            form: form, contentType: request.header("Content-Type") ?? "",
            maxTextBytes: context.configuration.server.maxBodyBytes)
        if reader.isMultipart, caller.anonymous, request.header("Cloak-Upload") != "1" {
            throw .malformed("a multipart upload without a token needs the header Cloak-Upload: 1")
        }
        if !reader.isMultipart { try request.requireJSONContentType() }
        let ticket = try admitUpload?(request.header("Content-Length").flatMap { Int($0) })
        let upload = FormUpload(
            next: next, reader: reader, vault: vault, caller: caller, today: context.today(), answer: answer,
            ticket: ticket, onOutcome: onFileOutcome)
        return .later { finish in upload.start(finish) }
    }

    /// Aliases first, then raw values, a raw value replacing an alias under the same key.
    static func flat(_ entries: [(key: String, value: String)], aliasKeys submission: FormSubmission) -> [(
        key: String, value: JSONValue
    )] {
        let rawKeys = Set(
            submission.entries.compactMap { if case .raw = $0.source { return $0.key } else { return nil } })
        var members: [(key: String, value: JSONValue)] = entries.filter { !rawKeys.contains($0.key) }.map {
            ($0.key, .string($0.value))
        }
        for entry in entries where rawKeys.contains(entry.key) {
            members.removeAll { $0.key == entry.key }
            members.append((entry.key, .string(entry.value)))
        }
        return members
    }
}
