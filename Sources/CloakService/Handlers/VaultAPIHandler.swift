import CloakCore
import CloakHTTP
import CloakVault

/// The Vault API: `POST /tokens`, `POST /aliases`, `GET /aliases/{alias}`, `GET /aliases?q=`,
/// `PUT /aliases/{alias}`, `DELETE /aliases/{alias}`, in the SDK's wire format.
struct VaultAPIHandler: Sendable {
    let vault: VaultClient
    let identity: Identity
    let openTokenize: Bool
    /// What the handler did, for the endpoint's audit lines.
    let outcome: Outcome?

    /// `POST /tokens` (v1, open like the SDK's tokenize unless `auth.open_tokenize` is false) and
    /// `POST /aliases` (v2, scope `aliases:create`). A caller without `aliases:reveal` gets the
    /// same answer whether a value was stored before or not (see ``AliasCaller/mayReveal``).
    func create(_ request: HTTPRequest, requiresToken: Bool) throws(CloakError) -> Reply {
        let caller = try identity.aliasCaller(openTokenize: openTokenize, requiresToken: requiresToken)
        // `POST /tokens` stores for anyone: JSON only (``HTTPRequest/requireJSONContentType()``).
        if !requiresToken { try request.requireJSONContentType() }
        let items = try Self.parseCreate(try request.jsonBody(), maxBatch: vault.settings.maxBatch)
        do { try Vault.check(items, caller: caller) } catch { throw error.cloakError { "data[\($0)]" } }
        for (i, item) in items.enumerated() {
            // Metadata and lifetimes are a token holder's: a browser must not plant them.
            if caller.anonymous, item.ttlSeconds != nil || !item.metadata.isEmpty {
                throw .malformed("data[\(i)]: ttl_s and metadata need a token with aliases:create")
            }
            // A record's lifetime belongs to every alias of the value: set by a caller that could
            // not reveal, it would tell by the alias's death whether the value was stored before,
            // and cut short other callers' aliases. PUT changes it for the rest.
            if item.ttlSeconds != nil, !caller.mayReveal {
                throw CloakError(
                    .forbidden,
                    "data[\(i)]: ttl_s on a create needs aliases:reveal (or set it with PUT, aliases:update)")
            }
        }

        return .later { finish in
            vault.createAliases(items, caller: caller) { result in
                switch result {
                case let .success(records):
                    let group = records.count > 1 ? records.first(where: { $0.group != nil })?.group : nil
                    finish(.json(201, Self.dataArray(records, group: group)))
                case let .failure(error):
                    finish(.error(error.cloakError { "data[\($0)]" }))
                }
            }
        }
    }

    /// `{"data":[record, …]}`, each record written straight into the answer, and `"group"` when
    /// the values formed one (shown only to callers who may reveal: the vault sets it for them).
    static func dataArray(_ records: [RevealedRecord], lifecycle: Bool = false, group: String? = nil) -> [UInt8] {
        var answer = JSONWriter(reservingCapacity: 192 * records.count + 16)
        answer.beginObject()
        answer.key("data" as StaticString)
        answer.beginArray()
        for record in records {
            answer.nextElement()
            record.write(into: &answer, lifecycle: lifecycle)
        }
        answer.endArray()
        if let group { answer.member("group", group) }
        answer.endObject()
        return answer.takeBytes()
    }

    /// `DELETE /aliases/{alias}`: 204 or 404 says whether the alias is live, so it is held like a
    /// reveal (``VaultClient/delete(_:completion:)``): a 404 is a guess, and past the limit 429.
    func delete(_ request: HTTPRequest, alias: String) throws(CloakError) -> Reply {
        try Self.requirePlausible(alias, outcome)
        return .later { finish in
            vault.delete(alias) { result in
                switch result {
                case .success:
                    // Its event committed with the change (``VaultAuditing``).
                    finish(HTTPResponse(status: 204))
                case let .failure(error):
                    audit(alias, error == .notFound ? .notFound : .error)
                    finish(.error(error.cloakError { _ in "alias" }))
                }
            }
        }
    }

    /// `PUT /aliases/{alias}` with `{"data":{"classifiers":[...]}}`: scope `aliases:update` (a
    /// creator must not rewrite other callers' records, nor learn which aliases exist), audited.
    /// The scope is checked before anything is looked up, and an alias that is malformed, unknown
    /// or expired gets the same 404. To the holder that 404 is a guess in the alias's bucket
    /// (``VaultClient/update(_:classifiers:metadata:ttlSeconds:completion:)``): past the limit 429.
    func update(_ request: HTTPRequest, alias: String) throws(CloakError) -> Reply {
        try Self.requirePlausible(alias, outcome)
        let change = try Self.parseUpdate(try request.jsonBody())
        return .later { finish in
            vault.update(
                alias, classifiers: change.classifiers, metadata: change.metadata, ttlSeconds: change.ttlSeconds
            ) { result in
                switch result {
                case .success:
                    // Its event committed with the change (``VaultAuditing``).
                    finish(HTTPResponse(status: 204))
                case let .failure(error):
                    audit(alias, error == .notFound ? .notFound : .error)
                    finish(.error(error.cloakError { _ in "alias" }))
                }
            }
        }
    }

    // MARK: Parsing

    /// `{"data":[{"value","format"?,"storage"?,"classifiers"?}]}`.
    static func parseCreate(_ body: JSONValue, maxBatch: Int) throws(CloakError) -> [AliasRequest] {
        guard case let .object(top) = body else { throw .malformed("the body must be a JSON object with a data array") }
        for (key, _) in top where key != "data" {
            throw .malformed("unknown member \"\(Redaction.scrub(key, limit: 64))\"; expected data")
        }
        guard let dataValue = body["data"], case let .array(items) = dataValue else {
            throw .malformed("\"data\" must be an array of {value, format, storage}")
        }
        guard !items.isEmpty else { throw .malformed("\"data\" is empty") }
        guard items.count <= maxBatch else {
            throw .malformed("\"data\" has \(items.count) items; at most \(maxBatch) (vault.max_batch) at once")
        }
        var out: [AliasRequest] = []
        out.reserveCapacity(items.count)
        var fields = Set<String>()
        for (i, item) in items.enumerated() {
            let at = "data[\(i)]"
            guard case let .object(members) = item else {
                throw .malformed("\(at) must be an object, not \(item.typeName)")
            }
            var value: String?
            var format = AliasFormatName.UUID
            var storage = StorageKind.persistent
            var classifiers: [String] = []
            var ttl: Int?
            var metadata: [String: String] = [:]
            var field: String?
            for (key, v) in members {
                switch key {
                case "field":
                    field = try parseField(v, at: "\(at).field")
                case "value":
                    guard case let .string(s) = v else {
                        throw .malformed("\(at).value must be a string, not \(v.typeName)")
                    }
                    guard !s.isEmpty, s.utf8.count <= 32_768 else {
                        throw .malformed("\(at).value must be 1 to 32768 bytes")
                    }
                    value = s
                case "format":
                    format = try AliasFormatName.member(v, at: at)
                case "storage":
                    guard let name = v.stringValue, let s = StorageKind(rawValue: name) else {
                        throw .malformed("\(at).storage must be PERSISTENT or VOLATILE")
                    }
                    storage = s
                case "classifiers":
                    classifiers = try parseClassifiers(v, at: "\(at).classifiers")
                case "ttl_s":
                    ttl = try parseTTL(v, at: "\(at).ttl_s")
                case "metadata":
                    metadata = try parseMetadata(v, at: "\(at).metadata")
                default:
                    throw .malformed("\(at) has an unknown member \"\(Redaction.scrub(key, limit: 64))\"")
                }
            }
            guard let value else { throw .malformed("\(at).value is missing") }
            var request = AliasRequest(value: value, format: format, storage: storage, classifiers: classifiers)
            request.ttlSeconds = ttl
            request.metadata = metadata
            // Every value of the call joins its group (issue 76) by its field, or its place
            // (PERSISTENT ones), except one named like a card's security code.
            if let field {
                guard fields.insert(field).inserted else {
                    throw .malformed("\(at).field: \"\(field)\" names another item of the call")
                }
                request.groupField = SecurityCodeName.matches(field) ? nil : field
            } else if storage == .persistent {
                // An unnamed VOLATILE value (a CVC, as callers store one) joins no group.
                request.groupField = at
            }
            out.append(request)
        }
        return out
    }

    /// An item's `field`: the name its value has in the call's group (and in an export's rows).
    static func parseField(_ v: JSONValue, at: String) throws(CloakError) -> String {
        guard let s = v.stringValue, !s.isEmpty, s.utf8.count <= 64,
            s.utf8.allSatisfy({
                ($0 >= 48 && $0 <= 57) || ($0 | 0x20 >= 97 && $0 | 0x20 <= 122) || $0 == 45 || $0 == 95 || $0 == 46
            })
        else { throw .malformed("\(at) must be 1 to 64 of A-Z a-z 0-9 - _ .") }
        guard !holdsLongDigitRun(s) else {
            throw .malformed("\(at) may not hold a run of nine or more digits (field names are stored with the rows)")
        }
        return s
    }

    static func parseClassifiers(_ v: JSONValue, at: String) throws(CloakError) -> [String] {
        guard case let .array(items) = v, items.count <= 16 else {
            throw .malformed("\(at) must be an array of at most 16 strings")
        }
        var out: [String] = []
        for item in items {
            guard let s = item.stringValue, !s.isEmpty, s.utf8.count <= 64,
                s.utf8.allSatisfy({
                    ($0 >= 48 && $0 <= 57) || ($0 | 0x20 >= 97 && $0 | 0x20 <= 122) || $0 == 45 || $0 == 95 || $0 == 46
                        || $0 == 58
                })
            else { throw .malformed("\(at): each classifier is 1 to 64 of A-Z a-z 0-9 - _ . :") }
            // Stored in clear, like metadata: no card number or SSN.
            guard !holdsLongDigitRun(s) else {
                throw .malformed("\(at) may not hold a run of nine or more digits (classifiers are stored in clear)")
            }
            // `form:NAME` says a form stored the record (an export selects a form's records, and
            // rows, by it): only its submissions and imports set it.
            guard !s.hasPrefix(FormSubmission.classifier(form: "")) else {
                throw .malformed("\(at): classifiers starting form: are the forms' own")
            }
            out.append(s)
        }
        return out
    }

    /// 404 for an alias that cannot name one (``isPlausibleAlias(_:)``): noted as not found,
    /// without a look-up.
    static func requirePlausible(_ alias: String, _ outcome: Outcome?) throws(CloakError) {
        guard isPlausibleAlias(alias) else {
            outcome?.alias(nil, .notFound)
            throw .notFound("no such alias")
        }
    }

    /// Aliases are printable ASCII (at most 256 bytes): anything else, a NUL or a control
    /// character above all, cannot name one and is not looked up.
    static func isPlausibleAlias(_ alias: String) -> Bool {
        !alias.isEmpty && alias.utf8.count <= 256 && alias.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F }
    }

    /// Notes one alias acted on for the endpoint's audit line (``AuditMiddleware`` writes it):
    /// its keyed reference (``Vault/auditReference(_:)``), never the alias, and the result.
    func audit(_ alias: String, _ result: AuditResult) {
        outcome?.alias(vault.vault.auditReference(alias), result)
    }
}
