import CloakCore
import CloakHTTP
import CloakVault

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
    let vault: Vault
    let auth: Authenticator

    func handle(_ request: HTTPRequest, form name: String, requiresToken: Bool, answer: Answer) throws(CloakError) -> Reply {
        if requiresToken { _ = try auth.authorize(request, scope: "aliases:create") }
        guard let form = context.configuration.forms[name] else {
            throw .notFound("unknown form \"\(Redaction.scrub(name, limit: 64))\"")
        }
        let collect = try CollectRequest(try request.jsonBody(), form: form)
        let validation = FormValidation(form: form, values: collect.values, context: ValidationContext(today: context.today()))
        if let error = validation.inputError { throw error }
        let submission = FormSubmission(validation, keepSensitiveRaw: answer == .mappedBody)
        do { try Vault.check(submission.requests) } catch { throw error.cloakError { "field \(submission.key(ofRequest: $0))" } }
        let policy = collect.mappingPolicy ?? form.mappingPolicy
        let extraData = collect.extraData
        return .later { finish in
            submission.resolve(with: vault) { result in
                switch result {
                case let .failure(error):
                    finish(.error(error))
                case let .success(entries):
                    switch answer {
                    case .flatResult:
                        finish(.json(200, .object(Self.flat(entries, aliasKeys: submission))))
                    case .mappedBody:
                        let fields = entries.map { (name: $0.key, value: JSONValue.string($0.value)) }
                        finish(.json(200, FieldNameMapper.body(fields, extraData: extraData, policy: policy)))
                    }
                }
            }
        }
    }

    /// Aliases first, then raw values, a raw value replacing an alias under the same key.
    static func flat(_ entries: [(key: String, value: String)], aliasKeys submission: FormSubmission) -> [(key: String, value: JSONValue)] {
        let rawKeys = Set(submission.entries.compactMap { if case .raw = $0.source { return $0.key } else { return nil } })
        var members: [(key: String, value: JSONValue)] = entries.filter { !rawKeys.contains($0.key) }.map { ($0.key, .string($0.value)) }
        for entry in entries where rawKeys.contains(entry.key) {
            members.removeAll { $0.key == entry.key }
            members.append((entry.key, .string(entry.value)))
        }
        return members
    }
}
