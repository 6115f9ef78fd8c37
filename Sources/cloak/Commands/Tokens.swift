import ArgumentParser
import CloakCore
import CloakCrypto
import CloakService
import CloakVault
import Foundation

struct Tokens: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Create, list, revoke and sign API credentials kept in the vault's store.",
        discussion: """
            Every command reads --config like serve, opens the key ring vault.keys names (the \
            store's credentials are signed with a key derived from it), and works while nodes \
            serve: they honour a new token, and refuse a revoked one, within auth.refresh_s. The \
            store keeps each token's SHA-256; the token is printed once, by create. Each change \
            (or refused change) writes an audit line, JSON as nodes log them, to standard error. \
            Exit 2: a configuration, key or store problem, or a refused change (nothing changed).
            """,
        subcommands: [Create.self, List.self, Revoke.self, Sign.self])

    /// The store, the YAML's ids and the ring's key for the credentials; exit 2 when the store or
    /// the ring cannot be opened, or the ring is not the one the store's records were sealed with
    /// (a document signed with it would be refused by every node).
    static func administration(_ options: ConfigOption) throws -> CredentialAdministration {
        let configuration = try options.load(.administration)
        let (store, ring) = storeAndRing(configuration)
        return CredentialAdministration(
            store: store, yamlIDs: Set(configuration.auth.map(\.id)), seal: CredentialSeal(ring: ring))
    }

    /// The store and the key ring vault.keys names, as the nodes open them; exit 2 when either
    /// cannot be opened, or the ring is not the one the store's records were sealed with (what
    /// it signs would be refused by every node). For the commands that write signed documents
    /// beside the records (`cloak tokens`, `cloak bins`).
    static func storeAndRing(_ configuration: ServiceConfiguration) -> (any AliasStore, KeyRing) {
        do {
            let store = try VaultBootstrap.store(configuration.vault)
            let ring = try VaultBootstrap.keys(
                configuration.vault, environment: ProcessInfo.processInfo.environment, logger: nil, store: store,
                firstRun: false
            ).ring
            if let check = try store.metadata("key_check"), !constantTimeEquals(check, ring.checkValue) {
                Keys.fail("the key ring vault.keys names is not the store's: set it to the ring the nodes use")
            }
            return (store, ring)
        } catch {
            Keys.fail("cannot open the store and its key ring: \(error)")
        }
    }

    static var now: Int64 { Int64(Date().timeIntervalSince1970) }
    static var actor: String { "cli:" + KeyAdministration.currentUser() }
    /// The audit lines of this command, on standard error.
    static var audit: CredentialAudit { .standardError(actor: actor) }

    static func warn(_ message: String) {
        FileHandle.standardError.write(Data("cloak: \(message)\n".utf8))
    }

    struct Create: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make a token; prints {\"id\", \"token\", \"expires_at\"} once.")
        @OptionGroup var options: ConfigOption
        @Option(help: "The token's id (1 to 64 of A-Z a-z 0-9 - _ .).") var id: String
        @Option(help: "Comma-separated scopes, e.g. aliases:create,aliases:reveal.") var scopes: String
        @Option(help: "Lifetime: 90d, 12h, 30m or seconds (at least a minute; none: never expires).")
        var ttl: String?
        @Option(help: "This token's own request rate.") var requestsPerMinute: Int?
        @Option(help: "The person the token acts for (required with jobs:export or jobs:approve).") var person: String?

        func validate() throws {
            if let ttl, APICredentials.parseTTL(ttl) == nil {
                throw ValidationError("--ttl must be like 90d, 12h, 30m or 3600 (a minute to ten years)")
            }
        }

        func run() throws {
            let admin = try Tokens.administration(options)
            let texts = scopes.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            let audit = Tokens.audit
            let created: CredentialAdministration.Created
            do {
                let scopes = try CredentialAdministration.scopes(texts)
                created = try admin.create(
                    id: id, scopes: scopes, ttlSeconds: ttl.flatMap(APICredentials.parseTTL),
                    requestsPerMinute: requestsPerMinute, now: Tokens.now, by: Tokens.actor, person: person)
            } catch {
                audit.refused(.tokensCreate, subject: id, reason: "\(error)")
                Keys.fail("\(error)")
            }
            audit.created(created)
            print(String(decoding: JSONWriter.encode(created.json), as: UTF8.self))
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Every token (the YAML's and the store's): id, scopes, source, state, minter, dates; "
                + "never a secret.",
            discussion: """
                A store document that is not signed, or does not verify, is listed as it is, with a \
                warning on standard error: no node honours its tokens until `cloak tokens sign`.
                """)
        @OptionGroup var options: ConfigOption

        func run() throws {
            let configuration = try options.load(.administration)
            let admin = try Tokens.administration(options)
            let (review, used) = Keys.run { (try admin.review(), try admin.lastUsed()) }
            let listing = CredentialAdministration.listing(
                yaml: configuration.auth, stored: review.credentials.tokens, used: used, seal: admin.seal)
            print(String(decoding: JSONWriter.encode(listing), as: UTF8.self))
            if let refusal = review.refusal {
                Tokens.warn("no node honours the store's tokens listed: \(refusal.description)")
            }
        }
    }

    struct Revoke: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove a store token and every token minted under it; nodes refuse them within "
                + "auth.refresh_s.")
        @OptionGroup var options: ConfigOption
        @Argument(help: "The token's id.") var id: String

        func run() throws {
            let admin = try Tokens.administration(options)
            let audit = Tokens.audit
            let revoked: CredentialAdministration.Revoked
            do {
                revoked = try admin.revoke(id: id, now: Tokens.now, by: Tokens.actor)
            } catch {
                audit.refused(.tokensRevoke, subject: id, reason: "\(error)")
                Keys.fail("\(error)")
            }
            audit.revoked(revoked)
            let minted =
                revoked.descendants.isEmpty
                ? "" : " and the tokens minted under it (\(revoked.descendants.joined(separator: ", ")))"
            print("revoked: \(id)\(minted); nodes refuse them within auth.refresh_s")
            if revoked.shadowed {
                print("the configuration's auth.tokens still has a token \(id): remove it there and reload")
            }
        }
    }

    struct Sign: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Sign the store's API credentials as they are: a document from before they were signed, "
                + "or one written without the key ring.",
            discussion: """
                Nodes honour only a document signed with the key ring. Review it first with \
                `cloak tokens list` (a token someone wrote into the database is listed too), sign it \
                with --yes, then revoke what should not be there. Signing an older Cloak's document \
                before the nodes are upgraded keeps every store token working through the upgrade.
                """)
        @OptionGroup var options: ConfigOption
        @Flag(help: "Sign the tokens `cloak tokens list` showed.") var yes = false

        func run() throws {
            let admin = try Tokens.administration(options)
            let review = Keys.run { try admin.review() }
            guard let refusal = review.refusal else {
                print("the store's API credentials verify: nothing to sign")
                return
            }
            let ids = review.credentials.tokens.map(\.id)
            // Signed or not, a token that breaks the two-person rule is never honoured by a node.
            for token in review.credentials.tokens {
                if let violation = ExportDuties.violation(scopes: token.scopes, person: token.person) {
                    Tokens.warn("token \(token.id) will not be honoured even once signed (\(violation)): revoke it")
                }
            }
            guard yes else {
                Tokens.warn(refusal.description)
                print(
                    "signing would make every node honour these store tokens: "
                        + (ids.isEmpty ? "(none)" : ids.joined(separator: ", ")))
                print("review them with `cloak tokens list`, then run `cloak tokens sign --yes`")
                Foundation.exit(1)
            }
            let audit = Tokens.audit
            let signed: CredentialAdministration.Signed?
            do {
                signed = try admin.sign(now: Tokens.now, by: Tokens.actor)
            } catch {
                audit.refused(.tokensSign, subject: nil, reason: "\(error)")
                Keys.fail("\(error)")
            }
            guard let signed else {
                print("the store's API credentials verify: nothing to sign")
                return
            }
            audit.signed(signed)
            print(
                "signed \(signed.ids.count) store tokens (serial \(signed.serial)); nodes honour them within "
                    + "auth.refresh_s")
        }
    }
}
