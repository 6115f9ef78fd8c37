import CloakCore
import CloakHTTP
import CloakVault

/// `POST /aliases/keep`: a backend keeps what an anonymous caller (a browser, an app) stored.
///
/// Deny by default, where the issue left room: an intent is kept only in its own format (a
/// `format` naming another is refused for that item), since a canonical alias in a format the
/// value was not given in (a UUID of a card whose intent showed its BIN and last four) would be
/// a deterministic target to guess the value against; and only a PERSISTENT intent is kept (a
/// kept VOLATILE one, a CVC, would become a lasting, deduplicated alias).
///
/// Everything a caller without `aliases:create` stores is an intent: it reveals and pays like
/// any alias but expires `auth.anonymous.intent_ttl_s` after it was made. Keeping an intent
/// answers the canonical alias of its value in the asked format (the intent's own by default):
/// the alias a token holder gets from `POST /aliases` with that value, PERSISTENT, deduplicated,
/// made when missing, with the intent's classifiers. The intent itself stays valid until it
/// expires. An alias that is unknown, expired or no intent gets one 404 error in its place.
extension VaultAPIHandler {
    /// One item of the request: the intent's alias and the format to keep it in (nil: its own).
    struct KeepItem: Sendable {
        let alias: String
        let format: AliasFormatName?
    }

    func keep(_ request: HTTPRequest) throws(CloakError) -> Reply {
        let caller = try identity.aliasCaller(openTokenize: false, requiresToken: true)
        let items = try Self.parseKeep(try request.jsonBody(), maxBatch: vault.settings.maxBatch)
        let wanted = Array(Set(items.map(\.alias).filter(Self.isPlausibleAlias)))
        // The intents are read unaudited: a kept item's event is its canonical create's, a
        // refused one's the handler's (one event an item).
        var unaudited = vault
        unaudited.audit = nil
        let reader = unaudited
        return .later { finish in
            // As a lookup: each alias costs one request of the token's rate, and aliases that are
            // not found count as guesses in their buckets (keep answers whether an alias is a
            // live intent, and its canonical alias: a scan of candidates would find cards).
            reader.revealGuessing(wanted) { result in
                guard case let .success(found) = result else {
                    if case let .failure(error) = result { finish(.error(error.cloakError { _ in "data" })) }
                    return
                }
                // Each item: an error, or the index of its request to the vault.
                var planned: [Result<Int, CloakError>] = []
                var toCreate: [AliasRequest] = []
                for (i, item) in items.enumerated() {
                    guard let record = found[item.alias], record.intent,
                        let issued = record.aliases.first(where: { $0.alias == item.alias })
                    else {
                        planned.append(.failure(.notFound("no such intent (unknown, expired, or not an intent)")))
                        continue
                    }
                    if let format = item.format, format != issued.format {
                        planned.append(
                            .failure(
                                .malformed("data[\(i)]: an intent is kept in its own format, \(issued.format.rawValue)")
                            ))
                        continue
                    }
                    guard record.storage == .persistent else {
                        planned.append(
                            .failure(.malformed("data[\(i)]: a VOLATILE intent is not kept; it expires with its value"))
                        )
                        continue
                    }
                    let keep = AliasRequest(
                        value: record.value, format: item.format ?? issued.format, storage: .persistent,
                        classifiers: record.classifiers, luhnValid: issued.luhnValid)
                    do throws(VaultError) { try Vault.check([keep], caller: caller) } catch {
                        planned.append(.failure(error.cloakError { _ in "data[\(i)]" }))
                        continue
                    }
                    planned.append(.success(toCreate.count))
                    toCreate.append(keep)
                }
                let (outcomes, requests) = (planned, toCreate)  // fixed from here on
                // `refused`: items whose file could not be kept (its content gone meanwhile).
                let answer: @Sendable ([RevealedRecord], [Int: CloakError]) -> Void = { records, refused in
                    var outcomes = outcomes
                    for (i, error) in refused { outcomes[i] = .failure(error) }
                    // A kept item's event is its canonical record's create, committed with it.
                    for (item, outcome) in zip(items, outcomes) {
                        if case .success = outcome { continue }
                        audit(item.alias, .notFound)
                    }
                    finish(.json(200, Self.keepAnswer(items, outcomes, requests, records)))
                }
                guard !requests.isEmpty else { return answer([], [:]) }
                // A file's content goes with the record it is kept as (else the intent's expiry
                // would take it with the intent).
                let keepsFiles = requests.contains { Self.uploadID(of: $0) != nil }
                vault.createAliases(requests, caller: caller) { result in
                    switch result {
                    case let .success(records) where keepsFiles:
                        Self.keepFiles(vault, items, outcomes, requests, records) { moved in
                            switch moved {
                            case let .success(refused): answer(records, refused)
                            case let .failure(error):
                                for item in items { audit(item.alias, .error) }
                                finish(.error(error.cloakError { _ in "data" }))
                            }
                        }
                    case let .success(records): answer(records, [:])
                    case let .failure(error):
                        for item in items { audit(item.alias, .error) }
                        finish(.error(error.cloakError { "data[\($0)]" }))
                    }
                }
            }
        }
    }

    /// The upload a kept value's file is, when the value is a file's (its classifier and its
    /// metadata both say so).
    static func uploadID(of request: AliasRequest) -> String? {
        guard request.classifiers.contains(Vault.fileClassifier) else { return nil }
        return Vault.FileMetadata(json: request.value)?.uploadID
    }

    /// Moves each kept file's content to its canonical record, one after another (a keep holds a
    /// handful). Succeeds with the items whose content was gone (each answered 404 in its place);
    /// fails when the store does (keeping again repairs it: a file already moved is left as it is).
    static func keepFiles(
        _ vault: VaultClient, _ items: [KeepItem], _ outcomes: [Result<Int, CloakError>], _ requests: [AliasRequest],
        _ records: [RevealedRecord], done: @escaping @Sendable (Result<[Int: CloakError], VaultError>) -> Void
    ) {
        var moves: [(item: Int, intent: String, canonical: String, upload: String)] = []
        for (i, (item, outcome)) in zip(items, outcomes).enumerated() {
            guard case let .success(index) = outcome, let upload = uploadID(of: requests[index]),
                let canonical = records[index].aliases.first(where: {
                    $0.matches(requests[index].format, luhnValid: requests[index].luhnValid)
                })
            else { continue }
            moves.append((i, item.alias, canonical.alias, upload))
        }
        let list = moves
        @Sendable func step(_ i: Int, _ refused: [Int: CloakError]) {
            guard i < list.count else { return done(.success(refused)) }
            let move = list[i]
            vault.keepFile(intent: move.intent, canonical: move.canonical, uploadID: move.upload) { result in
                switch result {
                case .success: step(i + 1, refused)
                case .failure(.notFound):
                    var refused = refused
                    refused[move.item] = .notFound("the file's content is gone (expired or deleted); nothing was kept")
                    step(i + 1, refused)
                case let .failure(error): done(.failure(error))
                }
            }
        }
        step(0, [:])
    }

    /// `{"data":[{"alias","canonical":{"alias","format"}} | {"alias","error":{…}}, …]}` in request order.
    static func keepAnswer(
        _ items: [KeepItem], _ outcomes: [Result<Int, CloakError>], _ requests: [AliasRequest],
        _ records: [RevealedRecord]
    ) -> [UInt8] {
        var w = JSONWriter(reservingCapacity: 128 * items.count + 16)
        w.beginObject()
        w.key("data" as StaticString)
        w.beginArray()
        for (item, outcome) in zip(items, outcomes) {
            w.nextElement()
            w.beginObject()
            w.member("alias", item.alias)
            switch outcome {
            case let .success(index):
                let request = requests[index]
                let canonical = records[index].aliases.first {
                    $0.matches(request.format, luhnValid: request.luhnValid)
                }
                w.key("canonical" as StaticString)
                w.beginObject()
                w.member("alias", canonical?.alias ?? "")
                w.member("format", request.format.rawValue)
                w.endObject()
            case let .failure(error):
                w.key("error" as StaticString)
                w.write(error.body["error"] ?? .null)  // the VGSError object itself
            }
            w.endObject()
        }
        w.endArray()
        w.endObject()
        return w.takeBytes()
    }

    /// `{"data":[{"alias","format"?}]}`, at most `maxBatch` items.
    static func parseKeep(_ body: JSONValue, maxBatch: Int) throws(CloakError) -> [KeepItem] {
        let items = try dataItems(body, maxBatch: maxBatch, shape: #"{"data":[{"alias":"…","format":"…"}]}"#)
        var out: [KeepItem] = []
        for (i, item) in items.enumerated() {
            let at = "data[\(i)]"
            guard case let .object(members) = item else {
                throw .malformed("\(at) must be an object, not \(item.typeName)")
            }
            var alias: String?
            var format: AliasFormatName?
            for (key, v) in members {
                switch key {
                case "alias":
                    guard case let .string(s) = v, !s.isEmpty, s.utf8.count <= 256 else {
                        throw .malformed("\(at).alias must be a string of 1 to 256 bytes")
                    }
                    alias = s
                case "format":
                    format = try AliasFormatName.member(v, at: at)
                default:
                    throw .malformed(
                        "\(at) has an unknown member \"\(Redaction.scrub(key, limit: 64))\"; expected alias, format")
                }
            }
            guard let alias else { throw .malformed("\(at).alias is required") }
            out.append(KeepItem(alias: alias, format: format))
        }
        return out
    }

    /// The items of `{"data":[…]}`: one to `maxBatch` of them, nothing else in the body.
    static func dataItems(_ body: JSONValue, maxBatch: Int, shape: String) throws(CloakError) -> [JSONValue] {
        guard case let .object(top) = body, top.count == 1, top[0].key == "data", case let .array(items) = top[0].value
        else {
            throw .malformed("expected \(shape)")
        }
        guard !items.isEmpty else { throw .malformed("\"data\" is empty") }
        guard items.count <= maxBatch else {
            throw .malformed("\"data\" has \(items.count) items; at most \(maxBatch) (vault.max_batch) at once")
        }
        return items
    }
}
