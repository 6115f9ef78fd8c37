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
    let vault: VaultClient
    let identity: Identity

    func handle(_ request: HTTPRequest, form name: String, requiresToken: Bool, answer: Answer) throws(CloakError)
        -> Reply
    {
        let caller = try identity.aliasCaller(
            openTokenize: context.configuration.openTokenize, requiresToken: requiresToken)
        let prepared = try Self.prepare(
            request, form: name, context: context, caller: caller,
            keepSensitiveRaw: answer == .mappedBody)
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

    /// A validated submission and how its body is built.
    struct Prepared: Sendable {
        let submission: FormSubmission
        let caller: AliasCaller
        let policy: MappingPolicy
        let extraData: [(key: String, value: JSONValue)]

        /// Aliases what needs it, then runs `body` with every entry's value and the earliest
        /// intent expiry (an anonymous caller's records); a vault failure is answered through
        /// `failing` instead.
        func resolve(
            with vault: VaultClient, failing: @escaping @Sendable (HTTPResponse) -> Void,
            _ body: @escaping @Sendable ([(key: String, value: String)], Int64?) -> Void
        ) {
            submission.resolve(with: vault, caller: caller) { result in
                switch result {
                case let .failure(error): failing(.error(error))
                case let .success(resolved): body(resolved.entries, resolved.intentExpiresAt)
                }
            }
        }

        /// The body an upstream receives: entries mapped by the policy, merged with `extraData`.
        func body(_ entries: [(key: String, value: String)]) -> JSONValue {
            FieldNameMapper.body(
                entries.map { (name: $0.key, value: JSONValue.string($0.value)) }, extraData: extraData,
                policy: policy)
        }
    }

    /// Validates a submission for `form` (1002, 1404, 1001) and plans its aliases.
    static func prepare(
        _ request: HTTPRequest, form name: String, context: ServiceContext, caller: AliasCaller,
        keepSensitiveRaw: Bool
    )
        throws(CloakError) -> Prepared
    {
        guard let form = context.configuration.forms[name] else {
            throw .notFound("unknown form \"\(Redaction.scrub(name, limit: 64))\"")
        }
        let collect = try request.collectRequest(for: form)
        let validation = FormValidation(
            form: form, values: collect.values, context: ValidationContext(today: context.today()))
        if let error = validation.inputError { throw error }
        let submission = FormSubmission(validation, keepSensitiveRaw: keepSensitiveRaw)
        do { try Vault.check(submission.requests, caller: caller) } catch {
            throw error.cloakError { "field \(submission.key(ofRequest: $0))" }
        }
        return Prepared(
            submission: submission, caller: caller, policy: collect.mappingPolicy ?? form.mappingPolicy,
            extraData: collect.extraData)
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
