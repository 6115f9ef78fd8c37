import CloakCore
import CloakHTTP
import CloakVault

/// `POST /forms/{form}/tokens` (Vault API v1) and `POST /forms/{form}/aliases` (v2, scope
/// `aliases:create`): validate, alias every field with tokenization, answer the SDK's flat result.
struct FormTokenizeHandler: Sendable {
    let context: ServiceContext
    let vault: Vault
    let auth: Authenticator

    func handle(_ request: HTTPRequest, form name: String, requiresToken: Bool) throws(CloakError) -> Reply {
        if requiresToken { _ = try auth.authorize(request, scope: "aliases:create") }
        guard let form = context.configuration.forms[name] else {
            throw .notFound("unknown form \"\(Redaction.scrub(name, limit: 64))\"")
        }
        let submission = try CollectRequest(try request.jsonBody(), form: form)
        let validation = FormValidation(form: form, values: submission.values, context: ValidationContext(today: context.today()))
        if let error = validation.inputError { throw error }
        let plan = Self.plan(validation)
        do { try Vault.check(plan.requests) } catch { throw error.cloakError { "field \(plan.keys[$0])" } }
        guard !plan.requests.isEmpty else {
            return .now(.json(200, .object(plan.raw.map { ($0.key, .string($0.value)) })))
        }
        return .later { finish in
            vault.createAliases(plan.requests) { result in
                switch result {
                case let .success(records):
                    finish(.json(200, .object(Self.result(plan, records))))
                case let .failure(error):
                    finish(.error(error.cloakError { "field \(plan.keys[$0])" }))
                }
            }
        }
    }

    struct Plan: Sendable {
        /// One alias request per tokenized value (a field, or a serializer component).
        var requests: [AliasRequest] = []
        /// The result key of each request.
        var keys: [String] = []
        /// Fields returned as they are: present, without tokenization, not sensitive.
        var raw: [(key: String, value: String)] = []
    }

    /// Which values are aliased and which are returned raw, as the SDK decides: sensitive types
    /// (card numbers, CVCs) without tokenization are dropped; serialized fields count per
    /// component; fields that were not sent, or are empty, are left out.
    static func plan(_ validation: FormValidation) -> Plan {
        var plan = Plan()
        for field in validation.fields where field.isPresent {
            let components = field.outputComponents.filter { !$0.value.isEmpty }
            if let settings = field.schema.tokenization {
                for c in components {
                    plan.requests.append(AliasRequest(value: c.value, format: settings.format, storage: settings.storage,
                                                      luhnValid: settings.luhnValid))
                    plan.keys.append(c.key)
                }
            } else if !field.schema.type.isSensitive {
                plan.raw += components
            }
        }
        return plan
    }

    /// `{fieldName: alias}` then the raw fields; a raw value wins on a key clash (SDK deepMerge).
    static func result(_ plan: Plan, _ records: [RevealedRecord]) -> [(key: String, value: JSONValue)] {
        var members: [(key: String, value: JSONValue)] = []
        for (i, record) in records.enumerated() {
            if let alias = record.aliases.first(where: { $0.format == plan.requests[i].format }) {
                members.append((plan.keys[i], .string(alias.alias)))
            }
        }
        for (key, value) in plan.raw {
            members.removeAll { $0.key == key }
            members.append((key, .string(value)))
        }
        return members
    }
}
