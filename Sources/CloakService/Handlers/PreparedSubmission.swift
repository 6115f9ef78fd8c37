import CloakCore
import CloakHTTP
import CloakVault

/// A form submission validated and planned for the vault, and how its body is built: what the
/// form endpoints answer and what a form route forwards (each uses it; neither calls the other).
struct PreparedSubmission: Sendable {
    let submission: FormSubmission
    let caller: AliasCaller
    let policy: MappingPolicy
    let extraData: [(key: String, value: JSONValue)]

    /// Validates a submission for `form` (1002, 1404, 1001) and plans its aliases.
    init(
        _ request: HTTPRequest, form name: String, context: ServiceContext, caller: AliasCaller,
        keepSensitiveRaw: Bool, bins: BinTable? = nil
    ) throws(CloakError) {
        guard let form = context.configuration.forms[name] else {
            throw .notFound("no such form")
        }
        try request.requireJSONContentType()
        let collect = try request.collectRequest(for: form)
        // With the node's BIN table: a card field's accept rule holds on submission too.
        var rules = ValidationContext(today: context.today())
        rules.bins = bins
        let validation = FormValidation(form: form, values: collect.values, context: rules)
        if let error = validation.inputError { throw error }
        let submission = FormSubmission(validation, keepSensitiveRaw: keepSensitiveRaw)
        do { try Vault.check(submission.requests, caller: caller) } catch {
            throw error.cloakError { "field \(submission.key(ofRequest: $0))" }
        }
        self.submission = submission
        self.caller = caller
        self.policy = collect.mappingPolicy ?? form.mappingPolicy
        self.extraData = collect.extraData
    }

    /// Aliases what needs it, then runs `body` with every entry's value and the earliest
    /// intent expiry (an anonymous caller's records); a vault failure is answered through
    /// `failing` instead.
    func resolve(
        with vault: VaultClient, failing: Reply.Finish,
        _ body: @escaping @Sendable ([(key: String, value: String)], Int64?) -> Void
    ) {
        submission.resolve(with: vault, caller: caller) { result in
            switch result {
            case let .failure(error): failing(.error(error))
            case let .success(resolved): body(resolved.entries, resolved.intentExpiresAt)
            }
        }
    }

    /// The names of the entries that are aliases (the rest are values as submitted).
    var aliasedKeys: Set<String> {
        Set(
            submission.entries.compactMap { entry in
                if case .alias = entry.source { return entry.key }
                return nil
            })
    }

    /// The body an upstream receives: entries mapped by the policy, merged with `extraData`.
    func body(_ entries: [(key: String, value: String)]) -> JSONValue {
        FieldNameMapper.body(
            entries.map { (name: $0.key, value: JSONValue.string($0.value)) }, extraData: extraData,
            policy: policy)
    }
}
