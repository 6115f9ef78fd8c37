import CloakCore
import CloakCrypto
import CloakVault
import Foundation

/// Creates, lists, revokes and signs the store's API credentials (``APICredentials``): `cloak
/// tokens` on an operator's machine, and `/admin/tokens` on a vault thread. Each change is a
/// compare-and-set of the store's document, builds only on a document that verifies with
/// ``seal`` (an unsigned or forged one is refused until an operator signs it: ``sign(now:by:)``),
/// writes it signed with a higher ``APICredentials/serial``, and writes an audit line into the
/// store's trail; the caller writes the operator's (``CredentialAudit``).
package struct CredentialAdministration {
    package let store: any AliasStore
    /// The ids of the YAML's `auth.tokens`: the store may not reuse one.
    package let yamlIDs: Set<String>
    /// The key ring's key for the document (``CredentialSeal``).
    package let seal: CredentialSeal
    /// The document this node adopted last (a node's `/admin/tokens`; nil for `cloak tokens`).
    /// A change builds on it, over the store's bytes, when the store's copy is missing, does not
    /// verify, or is older: a database writer who put back an old signed document (a revoked
    /// token in it) or deleted it cannot have the next change sign that state anew, nor block a
    /// revocation with a forged one.
    package var floor: APICredentials?

    package init(store: any AliasStore, yamlIDs: Set<String>, seal: CredentialSeal, floor: APICredentials? = nil) {
        self.store = store
        self.yamlIDs = yamlIDs
        self.seal = seal
        self.floor = floor
    }

    package typealias Error = APICredentials.Error

    /// What a create answers, once: the secret is in no store and no log.
    package struct Created: Sendable {
        package let token: ServiceConfiguration.AccessToken
        package let secret: String
        /// The serial of the document that holds it.
        package let serial: Int64

        /// `{"id","token","expires_at"}` (`expires_at` null when it never expires).
        package var json: JSONValue {
            .object([
                ("id", .string(token.id)), ("token", .string(secret)),
                ("expires_at", token.expiresAt.map { .string(RevealedRecord.iso8601($0)) } ?? .null),
            ])
        }
    }

    /// What a revoke removed: the token, and every token minted under it, down the tree.
    package struct Revoked: Sendable {
        package let token: ServiceConfiguration.AccessToken
        /// The ids of the tokens `token` minted, and those they minted, removed with it.
        package let descendants: [String]
        /// The YAML's `auth.tokens` has a token with the same id, which still holds.
        package let shadowed: Bool
        /// The serial of the document without them.
        package let serial: Int64
    }

    /// What ``sign(now:by:)`` signed.
    package struct Signed: Sendable {
        /// The ids of the tokens now signed, in the document's order.
        package let ids: [String]
        package let serial: Int64
    }

    /// The store's tokens, verified.
    /// - Throws: ``APICredentials/Error`` of kind `unsigned` or `unverified` when the document does
    ///   not verify (``review()`` reads it anyway).
    package func list() throws -> APICredentials {
        guard let bytes = try store.metadata(APICredentials.storeName) else { return APICredentials() }
        return try APICredentials.open(bytes, seal: seal)
    }

    /// The store's tokens as the document holds them, and why no node adopts it (nil: it verifies),
    /// for an operator to review before ``sign(now:by:)``.
    package func review() throws -> (credentials: APICredentials, refusal: Error?) {
        guard let bytes = try store.metadata(APICredentials.storeName) else { return (APICredentials(), nil) }
        switch Result(catching: { () throws(Error) in try APICredentials.open(bytes, seal: seal) }) {
        case let .success(credentials):
            return (credentials, nil)
        case let .failure(error):
            guard error.kind == .unsigned || error.kind == .unverified else { throw error }
            return (try APICredentials.decode(bytes), error)
        }
    }

    /// The token whose secret is `secret`, as a node honours it at `now` (the YAML's tokens and
    /// the store's signed ones, a minted one only while its minter stands): for a command that
    /// acts for a token and must know whose it is (`cloak export`, `cloak jobs approve`).
    package func presented(secret: String, yaml: [ServiceConfiguration.AccessToken], now: Int64) throws
        -> ServiceConfiguration.AccessToken?
    {
        let review = try review()
        let directory = TokenDirectory(yaml: yaml, seal: seal, now: { now })
        if review.refusal == nil { directory.adopt(review.credentials.tokens) }
        return directory.token(digest: Digest.sha256(Array(secret.utf8)))
    }

    /// A new token with `scopes`, expiring `ttlSeconds` after `now` (nil: never).
    /// - Parameters:
    ///   - guessAccount: whose guess windows the token shares (its minter's root); nil: its own.
    ///   - bucketValuesPerHour: its guess limit when below the configuration's (its minter's).
    ///   - minter: the token that mints it (`/admin/tokens`); nil: an operator (`cloak tokens`).
    ///     A store minter must still be in the document with the same secret.
    /// Scopes as an operator typed them (`cloak tokens create --scopes`).
    package static func scopes(_ texts: some Sequence<String>) throws(Error) -> Set<Scope> {
        var scopes: Set<Scope> = []
        for text in texts {
            guard let scope = Scope(parsing: text) else {
                throw Error("unknown scope \(Redaction.scrub(text, limit: 40))")
            }
            scopes.insert(scope)
        }
        return scopes
    }

    package func create(
        id: String, scopes: Set<Scope>, ttlSeconds: Int64?, requestsPerMinute: Int?, now: Int64, by actor: String,
        guessAccount: String? = nil, bucketValuesPerHour: Int? = nil, minter: ServiceConfiguration.AccessToken? = nil,
        person asked: String? = nil
    ) throws -> Created {
        guard TokenID.isValid(id) else { throw Error("the id must be 1 to 64 of A-Z a-z 0-9 - _ .") }
        guard !TokenID.looksLikeAValue(id) else {
            throw Error(
                "the id must not be all digits nor hold nine digits in a row (it is logged and audited as it is)")
        }
        guard !scopes.isEmpty else { throw Error("give at least one scope") }
        if let asked, !ExportDuties.isValidPerson(asked) {
            throw Error("the person must be 1 to 64 of A-Z a-z 0-9 . _ - @ +")
        }
        // A minted token is its minter's person: naming another would let one person mint the
        // second person an export needs.
        let person = minter.map(\.person) ?? asked
        if let minter, let asked, asked != minter.person {
            throw Error("a minted token is its minter's person; it cannot name another", .forbidden)
        }
        if let violation = ExportDuties.violation(scopes: scopes, person: person) { throw Error(violation, .forbidden) }
        _ = try Self.scopes(scopes.texts)  // none this version does not know
        if let requestsPerMinute, !(1...RateLimit.maxPerMinute).contains(requestsPerMinute) {
            throw Error("requests_per_minute must be 1 to \(RateLimit.maxPerMinute)")
        }
        guard !yamlIDs.contains(id) else {
            throw Error("the id \(id) is a token of the configuration's auth.tokens", .conflict)
        }
        let secret = APICredentials.newSecret()
        var token = ServiceConfiguration.AccessToken(
            id: id, sha256: Digest.sha256(Array(secret.utf8)), scopes: scopes, requestsPerMinute: requestsPerMinute)
        token.source = .store
        token.createdAt = now
        token.expiresAt = ttlSeconds.map { now + $0 }
        token.guessAccount = guessAccount
        token.bucketValuesPerHour = bucketValuesPerHour
        token.person = person
        if let minter {
            token.mintedBy = minter.id
            token.minterTag = seal.minterTag(minter.sha256)
        }
        let written = try change(now: now, by: actor) { credentials throws(Error) in
            guard !credentials.tokens.contains(where: { $0.id == id }) else {
                throw Error("the id \(id) exists", .conflict)
            }
            if let minter, minter.source == .store,
                !credentials.tokens.contains(where: { $0.id == minter.id && $0.sha256 == minter.sha256 })
            {
                throw Error("the token \(minter.id) was revoked", .forbidden)
            }
            credentials.tokens.append(token)
        }
        var fields: [(String, JSONValue)] = [("scopes", .strings(scopes.texts))]
        if let minter { fields.append(("minted_by", .string(minter.id))) }
        if let person { fields.append(("person", .string(person))) }
        try audit("tokens.create", id: id, by: actor, now: now, fields)
        return Created(token: token, secret: secret, serial: written.serial)
    }

    /// Removes the store's token `id` and every token minted under it, down the tree. An id only
    /// the YAML has is refused (it is revoked by editing the YAML); a store token whose id the YAML
    /// later took is removed (it would work again once the YAML entry went). `mayRevoke` decides
    /// on the token named (a caller may revoke only what it could grant; what that token minted
    /// holds no scope it did not).
    @discardableResult
    package func revoke(
        id: String, now: Int64, by actor: String,
        mayRevoke: (ServiceConfiguration.AccessToken) -> Bool = { _ in true }
    ) throws -> Revoked {
        var removed: ServiceConfiguration.AccessToken?
        var descendants: [String] = []
        let written = try change(now: now, by: actor) { credentials throws(Error) in
            guard let index = credentials.tokens.firstIndex(where: { $0.id == id }) else {
                if yamlIDs.contains(id) {
                    throw Error("the token is configured in auth.tokens: remove it there and reload", .forbidden)
                }
                throw Error("no such token", .notFound)
            }
            // A token the caller could not list is answered as one that does not exist: a 403
            // here told a narrow tokens:admin which ids exist beyond what it may see.
            guard mayRevoke(credentials.tokens[index]) else { throw Error("no such token", .notFound) }
            removed = credentials.tokens[index]
            descendants = APICredentials.descendants(of: id, in: credentials.tokens)
            let gone = Set(descendants + [id])
            credentials.tokens.removeAll { gone.contains($0.id) }
        }
        var fields: [(String, JSONValue)] = []
        if !descendants.isEmpty { fields.append(("descendants", .strings(descendants))) }
        try audit("tokens.revoke", id: id, by: actor, now: now, fields)
        return Revoked(
            token: removed!, descendants: descendants, shadowed: yamlIDs.contains(id), serial: written.serial)
    }

    /// Signs the store's document as it is, after an operator reviewed it (``review()``): one
    /// from before documents were signed, or one that does not verify (written without the key
    /// ring). Nil when there is none, or it already verifies. Its serial goes past `now` (in
    /// milliseconds, so past what nodes adopted before) and past the document's own claim, unless
    /// that claim is more than a day ahead of `now` (a forged one could otherwise leave no room
    /// above it).
    package func sign(now: Int64, by actor: String) throws -> Signed? {
        for _ in 0..<8 {
            guard let old = try store.metadata(APICredentials.storeName) else { return nil }
            switch Result(catching: { () throws(Error) in try APICredentials.open(old, seal: seal) }) {
            case .success: return nil
            case let .failure(error):
                // Only a document from before signing is signed: one that does not verify was
                // written without the key ring, and signing it would adopt whatever was forged.
                guard error.kind == .unsigned else {
                    throw error.kind == .unverified ? Error.forgedDocumentNotSigned : error
                }
            }
            var credentials = try APICredentials.decode(old)
            let claim = min(max(credentials.serial, 0), (max(now, 0) + 86_400) * 1000)
            credentials.serial = max(claim + 1, (max(now, 0) + 1) * 1000)
            if try store.replaceMetadata(APICredentials.storeName, expected: old, with: credentials.sealed(by: seal)) {
                let ids = credentials.tokens.map(\.id)
                try audit("tokens.sign", id: "-", by: actor, now: now, [("signed", .strings(ids))])
                return Signed(ids: ids, serial: credentials.serial)
            }
        }
        throw Error("the store's credentials kept changing under this change; try again", .store)
    }

    /// Applies `body` to the store's verified document and writes it signed, with a serial past
    /// the one it read (and at least `now` in milliseconds); returns what was written.
    private func change(now: Int64, by actor: String, _ body: (inout APICredentials) throws(Error) -> Void) throws
        -> APICredentials
    {
        for _ in 0..<8 {
            let old = try store.metadata(APICredentials.storeName)
            var credentials: APICredentials
            switch old.map({ bytes in Result { () throws(Error) in try APICredentials.open(bytes, seal: seal) } }) {
            case let .success(stored)?:
                credentials = floor.map { $0.serial > stored.serial ? $0 : stored } ?? stored
            case let .failure(error)?:
                guard let floor else { throw error }
                credentials = floor
            case nil:
                credentials = floor ?? APICredentials()
            }
            let previous = credentials.serial
            try body(&credentials)
            // Tokens expired more than a week go with any change (issue 56): the document, which
            // every node reads, verifies and indexes again on each change, holds the tokens that
            // live (and lately lived), not every token ever minted. A minted token expires no
            // later than its minter, so none is left without the minter it names.
            let gone = credentials.tokens.filter { APICredentials.isLongExpired($0, now: now) }.map(\.id)
            credentials.tokens.removeAll { APICredentials.isLongExpired($0, now: now) }
            credentials.serial = max(previous < Int64.max ? previous + 1 : previous, max(now, 0) * 1000)
            if try store.replaceMetadata(APICredentials.storeName, expected: old, with: credentials.sealed(by: seal)) {
                if !gone.isEmpty {
                    try audit("tokens.expire", id: "-", by: actor, now: now, [("removed", .strings(gone))])
                }
                return credentials
            }
        }
        throw Error("the store's credentials kept changing under this change; try again", .store)
    }

    private func audit(_ action: String, id: String, by actor: String, now: Int64, _ fields: [(String, JSONValue)])
        throws
    {
        var members: [(key: String, value: JSONValue)] = [
            ("ts", .string(RevealedRecord.iso8601(now))), ("level", .string("info")), ("msg", .string("audit")),
            ("action", .string(action)), ("token_id", .string(id)),
        ]
        for (key, value) in fields { members.append((key, value)) }
        members.append(("by", .string(actor)))
        try store.appendKeyAudit(String(decoding: JSONWriter.encode(.object(members)), as: UTF8.self), at: now)
    }
}
