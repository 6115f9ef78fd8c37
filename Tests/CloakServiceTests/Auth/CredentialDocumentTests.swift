import CloakCore
import CloakCrypto
import CloakService
import CloakTesting
import CloakVault
import Foundation
import Testing

@testable import CloakService

/// Issue 44, item 2: the store's API credentials are a signed document (``CredentialSeal``) that
/// a node adopts only when it verifies and goes forward; minted tokens stand with their minter
/// (item 10). Without a server: the document, a node's judgement, the directory, the store.
@Suite struct CredentialDocumentTests {
    static func token(
        _ id: String, secret: String, scopes: Set<Scope> = ["aliases:create"], mintedBy minter: String? = nil,
        minterSecret: String? = nil, seal: CredentialSeal? = nil
    ) -> ServiceConfiguration.AccessToken {
        var token = ServiceConfiguration.AccessToken(id: id, sha256: Digest.sha256(Array(secret.utf8)), scopes: scopes)
        token.source = .store
        token.createdAt = 1_000
        if let minter, let minterSecret, let seal {
            token.mintedBy = minter
            token.minterTag = seal.minterTag(Digest.sha256(Array(minterSecret.utf8)))
        }
        return token
    }

    static func yaml(_ id: String, secret: String, scopes: Set<Scope>) -> ServiceConfiguration.AccessToken {
        ServiceConfiguration.AccessToken(id: id, sha256: Digest.sha256(Array(secret.utf8)), scopes: scopes)
    }

    static func kind(_ body: () throws -> Void) -> APICredentials.Error.Kind? {
        do { try body() } catch let error as APICredentials.Error { return error.kind } catch { return nil }
        return nil
    }

    @Test func aDocumentVerifiesOnlyWithItsRingAndOnlyAsSigned() throws {
        let ring = KeyRing.generate()
        let seal = CredentialSeal(ring: ring)
        let document = APICredentials(tokens: [Self.token("app", secret: "app-secret")], serial: 5_000)
        let bytes = document.sealed(by: seal)
        #expect(try APICredentials.open(bytes, seal: seal) == document)
        // The same ring opened again (another node, `cloak tokens`) verifies it; another ring does not.
        #expect(try APICredentials.open(bytes, seal: CredentialSeal(ring: ring)) == document)
        let otherRing = CredentialSeal(ring: KeyRing.generate())
        #expect(Self.kind { _ = try APICredentials.open(bytes, seal: otherRing) } == .unverified)
        // What a database writer could change: a scope, the serial, a digest, a token added.
        let text = String(decoding: bytes, as: UTF8.self)
        let widened = text.replacingOccurrences(of: #"["aliases:create"]"#, with: #"["aliases:reveal"]"#)
        let replayedForward = text.replacingOccurrences(of: #""serial":5000"#, with: #""serial":9000"#)
        let otherSecret = text.replacingOccurrences(
            of: Hex.string(Digest.sha256(Array("app-secret".utf8))),
            with: Hex.string(Digest.sha256(Array("known".utf8))))
        for forged in [widened, replayedForward, otherSecret] {
            #expect(forged != text)
            #expect(Self.kind { _ = try APICredentials.open(Array(forged.utf8), seal: seal) } == .unverified)
        }
        var added = document
        added.tokens.append(Self.token("intruder", secret: "known", scopes: ["aliases:reveal"]))
        let withAttackersKey = added.sealed(by: CredentialSeal(ring: KeyRing.generate()))
        #expect(Self.kind { _ = try APICredentials.open(withAttackersKey, seal: seal) } == .unverified)
        // No MAC at all: the document of an older Cloak, or one written by hand.
        #expect(Self.kind { _ = try APICredentials.open(added.canonical(), seal: seal) } == .unsigned)
        let legacy =
            #"{"version":1,"tokens":[{"id":"old","sha256":""#
            + Hex.string(Digest.sha256(Array("old".utf8))) + #"","scopes":["aliases:create"],"created_at":1}]}"#
        #expect(Self.kind { _ = try APICredentials.open(Array(legacy.utf8), seal: seal) } == .unsigned)
        #expect(try APICredentials.decode(Array(legacy.utf8)).tokens.map(\.id) == ["old"])
        #expect(Self.kind { _ = try APICredentials.open(Array("{".utf8), seal: seal) } == .store)
    }

    @Test func aNodeAdoptsOnlyADocumentThatVerifiesAndGoesForward() {
        let seal = CredentialSeal(ring: KeyRing.generate())
        let first = APICredentials(tokens: [Self.token("a", secret: "a")], serial: 1_000)
        let second = APICredentials(tokens: [Self.token("b", secret: "b")], serial: 2_000)
        let none = CredentialRefresh.Held()
        let holdingSecond = CredentialRefresh.Held(bytes: second.sealed(by: seal), credentials: second)
        #expect(CredentialRefresh.judge(nil, held: none, seal: seal) == .unchanged)
        #expect(CredentialRefresh.judge(first.sealed(by: seal), held: none, seal: seal) == .adopt(first))
        #expect(CredentialRefresh.judge(second.sealed(by: seal), held: holdingSecond, seal: seal) == .unchanged)
        // An older signed document put back (a revoked token in it): refused, whatever it holds.
        #expect(
            CredentialRefresh.judge(first.sealed(by: seal), held: holdingSecond, seal: seal)
                == .refuse(.rollback, found: 1_000))
        var sameSerial = second
        sameSerial.tokens.append(Self.token("c", secret: "c"))
        #expect(
            CredentialRefresh.judge(sameSerial.sealed(by: seal), held: holdingSecond, seal: seal)
                == .refuse(.rollback, found: 2_000))
        var third = second
        third.serial = 3_000
        #expect(CredentialRefresh.judge(third.sealed(by: seal), held: holdingSecond, seal: seal) == .adopt(third))
        // Deleted, unsigned, forged, damaged: refused, and the node keeps what it holds.
        #expect(CredentialRefresh.judge(nil, held: holdingSecond, seal: seal) == .refuse(.missing, found: nil))
        #expect(
            CredentialRefresh.judge(third.canonical(), held: holdingSecond, seal: seal)
                == .refuse(.unsigned, found: nil))
        #expect(
            CredentialRefresh.judge(
                third.sealed(by: CredentialSeal(ring: KeyRing.generate())), held: holdingSecond, seal: seal)
                == .refuse(.unverified, found: nil))
        #expect(CredentialRefresh.judge([1, 2], held: none, seal: seal) == .refuse(.unreadable, found: nil))
        #expect(
            CredentialRefresh.explanation(.unsigned, holding: none).contains("cloak tokens sign"))
    }

    @Test func aMintedTokenStandsOnlyWhileItsMinterDoesWithTheSameSecret() {
        let seal = CredentialSeal(ring: KeyRing.generate())
        let admin = Self.yaml("admin", secret: "admin-secret", scopes: ["tokens:admin", "aliases:create"])
        // The grandchild comes first in the document: a minter may be written after what it minted.
        let grandchild = Self.token("grandchild", secret: "g", mintedBy: "child", minterSecret: "c", seal: seal)
        let child = Self.token(
            "child", secret: "c", scopes: ["tokens:admin", "aliases:create"], mintedBy: "admin",
            minterSecret: "admin-secret", seal: seal)
        let forgedTag = Self.token(
            "forged", secret: "f", mintedBy: "admin", minterSecret: "admin-secret",
            seal: CredentialSeal(ring: KeyRing.generate()))
        let directory = TokenDirectory(yaml: [admin], seal: seal)
        directory.adopt([grandchild, child, forgedTag])
        #expect(directory.token(digest: Digest.sha256(Array("c".utf8)))?.id == "child")
        #expect(directory.token(digest: Digest.sha256(Array("g".utf8)))?.id == "grandchild")
        #expect(directory.token(digest: Digest.sha256(Array("f".utf8))) == nil, "a tag not made with the ring")
        #expect(directory.orphans == ["forged"])

        // The minter's secret replaced in the YAML (a leaked one): what the old secret minted goes.
        directory.replaceYAML([Self.yaml("admin", secret: "new-admin-secret", scopes: admin.scopes)])
        #expect(directory.token(digest: Digest.sha256(Array("c".utf8))) == nil)
        #expect(directory.token(digest: Digest.sha256(Array("g".utf8))) == nil)
        #expect(Set(directory.orphans) == ["grandchild", "child", "forged"])
        // Back as it was, then removed from the YAML: the tree holds, then goes.
        directory.replaceYAML([admin])
        #expect(directory.token(id: "grandchild") != nil)
        directory.replaceYAML([])
        #expect(directory.token(id: "child") == nil && directory.token(id: "grandchild") == nil)
        // Without the ring's key no minted token stands.
        let keyless = TokenDirectory(yaml: [admin])
        keyless.adopt([child])
        #expect(keyless.token(id: "child") == nil)
    }

    @Test func theDescendantsOfATokenAreItsWholeTree() {
        let seal = CredentialSeal(ring: KeyRing.generate())
        let tokens = [
            Self.token("root", secret: "r", mintedBy: "admin", minterSecret: "a", seal: seal),
            Self.token("c1", secret: "1", mintedBy: "root", minterSecret: "r", seal: seal),
            Self.token("c2", secret: "2", mintedBy: "root", minterSecret: "r", seal: seal),
            Self.token("g1", secret: "3", mintedBy: "c1", minterSecret: "1", seal: seal),
            Self.token("other", secret: "o", mintedBy: "admin", minterSecret: "a", seal: seal),
        ]
        #expect(Set(APICredentials.descendants(of: "root", in: tokens)) == ["c1", "c2", "g1"])
        #expect(APICredentials.descendants(of: "g1", in: tokens).isEmpty)
    }

    @Test func twoYAMLTokensWithOneSecretAreRefused() {
        let digest = String(repeating: "ab", count: 32)
        let yaml = """
            auth:
              tokens:
                - {id: a, sha256: "\(digest)", scopes: [aliases:create]}
                - {id: b, sha256: "\(digest.uppercased())", scopes: [aliases:reveal]}
            """
        let error = #expect(throws: ConfigurationError.self) { try ServiceConfiguration.parse(yaml: yaml) }
        let issue = error?.issues.first { $0.path == "auth.tokens[1].sha256" }
        #expect(issue?.message.contains("auth.tokens[0]") == true, "\(error?.issues.map(\.path) ?? [])")
        #expect(error.map { !"\($0)".contains(digest) } ?? false, "the message names the entry, never the digest")
    }
}

/// The store's document through ``CredentialAdministration``, on a real SQLite file: changes
/// build only on a document that verifies, revoking a token takes its tree, a store token the
/// YAML shadows can be revoked, and an operator signs a document from before.
@Suite struct CredentialStoreTests {
    static func store(_ directory: TemporaryDirectory) throws -> any AliasStore {
        var settings = ServiceConfiguration.VaultSettings()
        settings.store = "sqlite:\(directory.path)/cloak.db"
        return try VaultBootstrap.store(settings)
    }

    @Test func revokingATokenRevokesEveryTokenMintedUnderIt() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let admin = CredentialAdministration(
            store: try Self.store(directory), yamlIDs: ["admin"], seal: CredentialSeal(ring: KeyRing.generate()))
        let yamlAdmin = CredentialDocumentTests.yaml(
            "admin", secret: "admin-secret", scopes: ["tokens:admin", "aliases:create"])
        let scopes: Set<Scope> = ["tokens:admin", "aliases:create"]
        let root = try admin.create(
            id: "root", scopes: scopes, ttlSeconds: nil, requestsPerMinute: nil, now: 10, by: "t", minter: yamlAdmin)
        let child = try admin.create(
            id: "child", scopes: scopes, ttlSeconds: nil, requestsPerMinute: nil, now: 11, by: "t", minter: root.token)
        _ = try admin.create(
            id: "grandchild", scopes: ["aliases:create"], ttlSeconds: nil, requestsPerMinute: nil, now: 12, by: "t",
            minter: child.token)
        _ = try admin.create(
            id: "sibling", scopes: ["aliases:create"], ttlSeconds: nil, requestsPerMinute: nil, now: 13, by: "t",
            minter: yamlAdmin)
        #expect(try admin.list().tokens.first { $0.id == "grandchild" }?.mintedBy == "child")
        let revoked = try admin.revoke(id: "root", now: 14, by: "t")
        #expect(revoked.descendants == ["child", "grandchild"])
        #expect(try admin.list().tokens.map(\.id) == ["sibling"])
        // A token minted by one revoked meanwhile is refused, not written.
        #expect(
            CredentialDocumentTests.kind {
                _ = try admin.create(
                    id: "late", scopes: ["aliases:create"], ttlSeconds: nil, requestsPerMinute: nil, now: 15, by: "t",
                    minter: child.token)
            } == .forbidden)
        let trail = try admin.store.keyAudit(limit: 10).joined(separator: "\n")
        #expect(trail.contains(#""descendants":["child","grandchild"]"#))
    }

    @Test func aStoreTokenWhoseIDTheYAMLTookCanStillBeRevoked() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = try Self.store(directory)
        let seal = CredentialSeal(ring: KeyRing.generate())
        let before = CredentialAdministration(store: store, yamlIDs: [], seal: seal)
        _ = try before.create(
            id: "later", scopes: ["aliases:create"], ttlSeconds: nil, requestsPerMinute: nil, now: 10, by: "t")
        // The YAML now has `later` too: the store's is refused on nodes, and can still be removed.
        let after = CredentialAdministration(store: store, yamlIDs: ["later", "admin"], seal: seal)
        let listing = CredentialAdministration.listing(
            yaml: [CredentialDocumentTests.yaml("later", secret: "y", scopes: ["aliases:create"])],
            stored: try after.list().tokens, used: [:], seal: seal)
        #expect(JSONWriter.string(listing).contains(#""source":"store","state":"shadowed""#))
        let revoked = try after.revoke(id: "later", now: 11, by: "t")
        #expect(revoked.shadowed)
        #expect(try after.list().tokens.isEmpty)
        #expect(CredentialDocumentTests.kind { _ = try after.revoke(id: "admin", now: 12, by: "t") } == .forbidden)
    }

    @Test func aDocumentFromBeforeIsRefusedUntilAnOperatorSignsIt() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = try Self.store(directory)
        let admin = CredentialAdministration(store: store, yamlIDs: [], seal: CredentialSeal(ring: KeyRing.generate()))
        let legacy =
            #"{"version":1,"tokens":[{"id":"old","sha256":""#
            + Hex.string(Digest.sha256(Array("old".utf8))) + #"","scopes":["aliases:create"],"created_at":1}]}"#
        try store.setMetadata(APICredentials.storeName, Array(legacy.utf8))
        // Nothing builds on it, and nothing lists it as verified.
        #expect(CredentialDocumentTests.kind { _ = try admin.list() } == .unsigned)
        #expect(
            CredentialDocumentTests.kind {
                _ = try admin.create(
                    id: "new", scopes: ["aliases:create"], ttlSeconds: nil, requestsPerMinute: nil, now: 5, by: "t")
            } == .unsigned)
        #expect(CredentialDocumentTests.kind { _ = try admin.revoke(id: "old", now: 5, by: "t") } == .unsigned)
        let review = try admin.review()
        #expect(review.refusal?.kind == .unsigned && review.credentials.tokens.map(\.id) == ["old"])
        // The operator signs it: it verifies, past any serial nodes held, and changes go on.
        let signed = try #require(try admin.sign(now: 1_000, by: "cli:op"))
        #expect(signed.ids == ["old"] && signed.serial > 1_000_000)
        #expect(try admin.list().tokens.map(\.id) == ["old"])
        #expect(try admin.sign(now: 1_001, by: "cli:op") == nil, "nothing left to sign")
        let created = try admin.create(
            id: "new", scopes: ["aliases:create"], ttlSeconds: nil, requestsPerMinute: nil, now: 1_001, by: "t")
        #expect(created.serial > signed.serial)
        #expect(try admin.store.keyAudit(limit: 10).joined(separator: "\n").contains("tokens.sign"))
    }
}
