import CloakCore
import CloakHTTP
import CloakVault
import Synchronization

/// `POST /admin/tokens`, `GET /admin/tokens`, `DELETE /admin/tokens/{id}` (scope
/// `tokens:admin`): API credentials at run time, kept in the store (``CredentialAdministration``)
/// so every node honours them within `auth.refresh_s`; this node at once. A caller never grants
/// (nor revokes) a scope it does not hold, and sees in the list only the tokens it could have
/// granted. A minted token names its minter (`minted_by`) and goes with it: revoking a token
/// revokes every token minted under it, down the tree. Never a secret in an answer but the one a
/// create makes, once, with `Cache-Control: no-store`.
struct AdminTokensHandler: Sendable {
    let vault: VaultClient
    let identity: Identity
    let directory: TokenDirectory
    let refresh: CredentialRefresh?
    let outcome: Outcome?
    let now: Int64
    /// `limits.token.requests_per_minute`: a token's rate when its entry sets none.
    var defaultRequestsPerMinute = Int.max
    /// `limits.bucket_values_per_hour`: a token's guess limit when its entry sets none.
    var defaultBucketValuesPerHour = Int.max

    private var held: Set<Scope> { identity.grantable ?? identity.token?.scopes ?? [] }
    private var actor: String { "token:" + (identity.token?.id ?? "-") }

    /// The key of the store's credentials (the directory's; a node with a vault always has one).
    private var seal: CredentialSeal { directory.seal ?? CredentialSeal(vault: vault.vault) }

    private func administration(_ store: any AliasStore) -> CredentialAdministration {
        CredentialAdministration(
            store: store, yamlIDs: Set(directory.yaml.map(\.id)), seal: seal,
            floor: directory.adoptedDocument.withLock { $0 })
    }

    /// `{"id", "scopes": [...], "ttl_s"?, "requests_per_minute"?}` → 201 `{"id","token","expires_at"}`.
    func create(_ request: HTTPRequest) throws(CloakError) -> Reply {
        guard case let .object(members) = try request.jsonBody() else {
            throw .malformed("the body must be a JSON object")
        }
        var id: String?
        var scopes: [String]?
        var ttl: Int64?
        var perMinute: Int?
        for (key, value) in members {
            switch key {
            case "id": id = value.stringValue
            case "scopes":
                guard case let .array(items) = value, items.count <= 32 else {
                    throw .malformed("scopes must be an array of at most 32 strings")
                }
                scopes = items.compactMap(\.stringValue)
                if scopes?.count != items.count { throw .malformed("scopes must be an array of strings") }
            case "ttl_s":
                guard case let .number(text) = value, let n = Int64(text), (60...315_360_000).contains(n) else {
                    throw .malformed("ttl_s must be an integer from 60 to 315360000")
                }
                ttl = n
            case "requests_per_minute":
                guard case let .number(text) = value, let n = Int(text) else {
                    throw .malformed("requests_per_minute must be an integer")
                }
                perMinute = n
            default:
                throw .malformed(
                    "unknown member \"\(Redaction.scrub(key, limit: 64))\"; expected id, scopes, ttl_s, requests_per_minute"
                )
            }
        }
        guard let id, let scopes else { throw .malformed("the body needs id and scopes") }
        // A minted token is bounded by its minter: no faster (each token has its own rate
        // bucket), no longer-lived, its guesses counted as its minter's and held to no higher a
        // limit, so minting does not multiply the guess limit.
        let minterRate = identity.token?.requestsPerMinute ?? defaultRequestsPerMinute
        if let perMinute, perMinute > minterRate {
            throw CloakError(.forbidden, "a token cannot grant a rate above its own (\(minterRate) requests a minute)")
        }
        if perMinute == nil, minterRate < defaultRequestsPerMinute { perMinute = minterRate }
        if let minterExpiry = identity.token?.expiresAt {
            let left = max(minterExpiry - now, 1)
            if let asked = ttl, asked > left {
                throw CloakError(.forbidden, "a token cannot outlive its minter: ttl_s at most \(left)")
            }
            ttl = ttl ?? left
        }
        var granted: Set<Scope> = []
        for text in scopes {
            guard let scope = Scope(parsing: text) else {
                throw .malformed("unknown scope \"\(Redaction.scrub(text, limit: 40))\"")
            }
            granted.insert(scope)
        }
        let asked = granted
        for scope in asked.sorted() where !APICredentials.mayGrant(scope, holding: held) {
            outcome?.alias(nil, .refused, facts: [("subject", id), ("scope", scope.text)])
            throw CloakError(.forbidden, "a token cannot grant the scope \(scope): the caller does not hold it")
        }
        let (now, actor, outcome, ttlSeconds, requestsPerMinute) = (self.now, self.actor, self.outcome, ttl, perMinute)
        let guessAccount = identity.token?.guessKey
        let minter = identity.token
        let bucketLimit = identity.token?.bucketValuesPerHour.flatMap { $0 < defaultBucketValuesPerHour ? $0 : nil }
        return .later { [self] finish in
            vault.vault.withStore(reads: false) { store in
                try administration(store).create(
                    id: id, scopes: asked, ttlSeconds: ttlSeconds, requestsPerMinute: requestsPerMinute, now: now,
                    by: actor, guessAccount: guessAccount, bucketValuesPerHour: bucketLimit, minter: minter)
            } completion: { result in
                switch result {
                case let .success(created):
                    outcome?.alias(
                        nil, .ok, facts: [("subject", id), ("scopes", asked.texts.joined(separator: ","))])
                    adoptThen(own: created.serial) {
                        finish(.json(201, JSONWriter.encode(created.json), headers: HTTPResponse.noStoreHeaders))
                    }
                case let .failure(error):
                    outcome?.alias(nil, .refused, facts: [("subject", id)])
                    finish(.error(Self.cloakError(error)))
                }
            }
        }
    }

    /// 200 `{"data": [{id, scopes, source, state, minted_by, created_at, expires_at, last_used_at,
    /// requests_per_minute}], "next"}`: only the tokens whose every scope the caller could grant
    /// (a narrow `tokens:admin` token does not learn what wider tokens may do). `?limit=N` (1 to
    /// 1,000) answers a page, `next` the `after` of the following one (null on the last);
    /// without `limit`, every token.
    func list(_ request: HTTPRequest) throws(CloakError) -> Reply {
        var limit: Int?
        var after: String?
        for (name, value) in try StrictQuery.pairs(request.query, known: ["limit", "after"]) {
            if name == "after" {
                after = value
            } else {
                guard let n = Int(value), (1...1_000).contains(n) else { throw .malformed("limit must be 1 to 1000") }
                limit = n
            }
        }
        let held = self.held
        let (pageAfter, pageLimit) = (after, limit)
        return .later { [self] finish in
            vault.vault.withStore(reads: true) { store in
                let admin = administration(store)
                return (try admin.list(), try admin.lastUsed())
            } completion: { result in
                switch result {
                case let .success((stored, used)):
                    var seen = used
                    for (id, t) in directory.lastUsed where t > seen[id] ?? 0 { seen[id] = t }
                    let listing = CredentialAdministration.listing(
                        yaml: directory.yaml, stored: stored.tokens, used: seen, seal: seal
                    ) { token in token.scopes.allSatisfy { APICredentials.mayGrant($0, holding: held) } }
                    finish(
                        .json(
                            200, Self.page(listing, after: pageAfter, limit: pageLimit),
                            headers: HTTPResponse.noStoreHeaders))
                case let .failure(error):
                    finish(.error(Self.cloakError(error)))
                }
            }
        }
    }

    /// A page of the listing: without `limit` or `after`, every token in the listing's order;
    /// with them, the tokens after `after`, by id and then source (the YAML's and a shadowed
    /// store token may share an id), at most `limit`, and the next page's `after`
    /// (`id:source`; a bare id starts past every token of that id). A cursor, not an offset: a
    /// token revoked meanwhile moves no page.
    static func page(_ listing: JSONValue, after: String?, limit: Int?) -> JSONValue {
        guard case let .array(all)? = listing["data"] else { return listing }
        guard limit != nil || after != nil else { return .object([("data", .array(all)), ("next", .null)]) }
        func key(_ item: JSONValue) -> (String, String) {
            (item["id"]?.stringValue ?? "", item["source"]?.stringValue ?? "")
        }
        var cursor: (String, String)?
        if let after {
            let parts = after.split(separator: ":", maxSplits: 1)
            // A bare id sorts after every source of that id ("~" is above the sources' letters).
            cursor = (String(parts.first ?? ""), parts.count > 1 ? String(parts[1]) : "~")
        }
        let sorted = all.sorted { key($0) < key($1) }.filter { item in cursor.map { key(item) > $0 } ?? true }
        let items = Array(sorted.prefix(limit ?? sorted.count))
        guard items.count < sorted.count, let last = items.last else {
            return .object([("data", .array(items)), ("next", .null)])
        }
        let (id, source) = key(last)
        return .object([("data", .array(items)), ("next", .string("\(id):\(source)"))])
    }

    /// 204 once the token, and every token minted under it, is gone from the store (and from
    /// this node). A store token whose id the YAML took since is removed too (the YAML's stays).
    func revoke(id: String) throws(CloakError) -> Reply {
        guard TokenID.isValid(id) else { throw .notFound("no such token") }
        let held = self.held
        let (now, actor, outcome) = (self.now, self.actor, self.outcome)
        return .later { [self] finish in
            vault.vault.withStore(reads: false) { store in
                try administration(store).revoke(id: id, now: now, by: actor) { token in
                    token.scopes.allSatisfy { APICredentials.mayGrant($0, holding: held) }
                }
            } completion: { result in
                switch result {
                case let .success(revoked):
                    var facts = [("subject", id)]
                    if !revoked.descendants.isEmpty {
                        facts.append(("descendants", revoked.descendants.joined(separator: ",")))
                    }
                    outcome?.alias(nil, .ok, facts: facts)
                    adoptThen(own: revoked.serial) { finish(HTTPResponse(status: 204)) }
                case let .failure(error):
                    outcome?.alias(nil, .refused, facts: [("subject", id)])
                    finish(.error(Self.cloakError(error)))
                }
            }
        }
    }

    /// Reads the store again on this node before answering: the change holds here at once (its
    /// adoption's audit line says this node made it: `own` is the serial it wrote).
    private func adoptThen(own serial: Int64, _ answer: @escaping @Sendable () -> Void) {
        guard let refresh else { return answer() }
        refresh.refreshNow(own: serial, done: answer)
    }

    /// The answer for a refused change, or for a store that did not answer (never its text:
    /// it may name the database's host).
    static func cloakError(_ error: any Error) -> CloakError {
        if let error = error as? APICredentials.Error {
            let answer = error.cloakError
            // The store failed: retried after its backoff, as every 503 the store causes. A
            // document that does not verify waits for an operator (`cloak tokens sign`), not a retry.
            guard answer.code == .vaultUnavailable, error.kind == .store else { return answer }
            return .storeUnavailable(answer.message)
        }
        return .storeUnavailable("the vault is unavailable; nothing was changed")
    }
}
