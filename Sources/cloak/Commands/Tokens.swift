import ArgumentParser
import CloakCore
import CloakService
import CloakVault
import Foundation

struct Tokens: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Create, list and revoke API credentials kept in the vault's store.",
        discussion: """
            Every command reads --config like serve and works while nodes serve: they honour a new \
            token, and refuse a revoked one, within auth.refresh_s. The store keeps each token's \
            SHA-256; the token is printed once, by create. Exit 2: a configuration or store problem, \
            or a refused change (nothing changed).
            """,
        subcommands: [Create.self, List.self, Revoke.self])

    static func administration(_ options: ConfigOption) throws -> CredentialAdministration {
        let configuration = try options.load()
        do {
            return CredentialAdministration(
                store: try VaultBootstrap.store(configuration.vault), yamlIDs: Set(configuration.auth.map(\.id)))
        } catch {
            Keys.fail("cannot open the store: \(error)")
        }
    }

    static var now: Int64 { Int64(Date().timeIntervalSince1970) }
    static var actor: String { "cli:" + KeyAdministration.currentUser() }

    struct Create: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make a token; prints {\"id\", \"token\", \"expires_at\"} once.")
        @OptionGroup var options: ConfigOption
        @Option(help: "The token's id (1 to 64 of A-Z a-z 0-9 - _ .).") var id: String
        @Option(help: "Comma-separated scopes, e.g. aliases:create,aliases:reveal.") var scopes: String
        @Option(help: "Lifetime: 90d, 12h, 30m or seconds (at least a minute; none: never expires).")
        var ttl: String?
        @Option(help: "This token's own request rate.") var requestsPerMinute: Int?

        func validate() throws {
            if let ttl, APICredentials.parseTTL(ttl) == nil {
                throw ValidationError("--ttl must be like 90d, 12h, 30m or 3600 (a minute to ten years)")
            }
        }

        func run() throws {
            let admin = try Tokens.administration(options)
            let scopes = Set(scopes.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
            let created = Keys.run {
                try admin.create(
                    id: id, scopes: scopes, ttlSeconds: ttl.flatMap(APICredentials.parseTTL),
                    requestsPerMinute: requestsPerMinute, now: Tokens.now, by: Tokens.actor)
            }
            print(String(decoding: JSONWriter.encode(created.json), as: UTF8.self))
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Every token (the YAML's and the store's): id, scopes, dates, source; never a secret.")
        @OptionGroup var options: ConfigOption

        func run() throws {
            let configuration = try options.load()
            let admin = try Tokens.administration(options)
            let (stored, used) = Keys.run { (try admin.list(), try admin.lastUsed()) }
            let listing = CredentialAdministration.listing(yaml: configuration.auth, stored: stored.tokens, used: used)
            print(String(decoding: JSONWriter.encode(listing), as: UTF8.self))
        }
    }

    struct Revoke: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove a store token; nodes refuse it within auth.refresh_s.")
        @OptionGroup var options: ConfigOption
        @Argument(help: "The token's id.") var id: String

        func run() throws {
            let admin = try Tokens.administration(options)
            _ = Keys.run { try admin.revoke(id: id, now: Tokens.now, by: Tokens.actor) }
            print("revoked: \(id); nodes refuse it within auth.refresh_s")
        }
    }
}
