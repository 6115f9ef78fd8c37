import CloakCrypto
import Foundation
import Synchronization

/// Every token a node accepts, in memory: the YAML's `auth.tokens` and the store's
/// ``APICredentials``, found by the SHA-256 of the presented secret (one hash lookup; the
/// presenter knows its own digest, so the lookup's timing tells it nothing it did not send).
///
/// The store's tokens are replaced as a whole (``adopt(_:)``) by ``CredentialRefresh`` every
/// `auth.refresh_s` and at once after this node changed them; a request reads one snapshot. An
/// expired token is refused at the second it expires, whatever the refresh. A store token is in
/// the snapshot only while it stands (``APICredentials/standings(yaml:stored:seal:)``): not
/// shadowed by a YAML id, and, when minted, with its minter standing under the same secret, so a
/// reload that removes or replaces a minter drops what it minted at once.
final class TokenDirectory: Sendable {
    /// One token and when this node last saw it presented (Unix seconds; 0: not since start).
    final class Entry: Sendable {
        let token: ServiceConfiguration.AccessToken
        let lastUsed = Atomic<Int64>(0)
        init(_ token: ServiceConfiguration.AccessToken) { self.token = token }
    }

    struct Snapshot: Sendable {
        var byDigest: [[UInt8]: Entry] = [:]
        var byID: [String: Entry] = [:]
        /// The store's tokens that are not honoured for their minter (``APICredentials/Standing/orphaned``).
        var orphans: [String] = []
    }

    /// The tokens each source gave last, and the snapshot made of them.
    private struct Sources: Sendable {
        var yaml: [ServiceConfiguration.AccessToken]
        var stored: [ServiceConfiguration.AccessToken] = []
    }
    private let sources: Mutex<Sources>
    /// The store's document this node adopted last (``CredentialRefresh``): what its own changes
    /// build on when the store's copy is missing, forged or older (``CredentialAdministration/floor``).
    package let adoptedDocument = Mutex<APICredentials?>(nil)
    private let snapshot: Mutex<Snapshot>
    /// The clock of expiry and use (tests move it).
    let now: @Sendable () -> Int64
    /// The key of the store's credentials (nil without a vault: then no store token is adopted
    /// that names a minter).
    let seal: CredentialSeal?

    init(
        yaml: [ServiceConfiguration.AccessToken], seal: CredentialSeal? = nil,
        now: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }
    ) {
        self.sources = Mutex(Sources(yaml: yaml))
        self.now = now
        self.seal = seal
        self.snapshot = Mutex(Self.snapshot(yaml: yaml, stored: [], seal: seal).snapshot)
    }

    /// The token whose secret has this SHA-256, when it has not expired; marks it used.
    func token(digest: [UInt8]) -> ServiceConfiguration.AccessToken? {
        guard let entry = snapshot.withLock({ $0.byDigest[digest] }) else { return nil }
        return admit(entry)
    }

    /// The token with this id, when it has not expired (a tunnel's grant, a session's minter).
    func token(id: String) -> ServiceConfiguration.AccessToken? {
        guard let entry = snapshot.withLock({ $0.byID[id] }) else { return nil }
        return admit(entry)
    }

    private func admit(_ entry: Entry) -> ServiceConfiguration.AccessToken? {
        let now = self.now()
        if entry.token.hasExpired(at: now) { return nil }
        if entry.lastUsed.load(ordering: .relaxed) != now { entry.lastUsed.store(now, ordering: .relaxed) }
        return entry.token
    }

    /// The YAML's tokens now.
    var yaml: [ServiceConfiguration.AccessToken] { sources.withLock { $0.yaml } }

    /// Replaces the store's tokens. An id the YAML also names is refused (the YAML's stays);
    /// returns those ids, for the log.
    @discardableResult
    func adopt(_ stored: [ServiceConfiguration.AccessToken]) -> [String] {
        rebuild { $0.stored = stored }
    }

    /// Replaces the YAML's tokens (a reload); returns the store's ids it now shadows.
    @discardableResult
    func replaceYAML(_ yaml: [ServiceConfiguration.AccessToken]) -> [String] {
        rebuild { $0.yaml = yaml }
    }

    private func rebuild(_ change: (inout Sources) -> Void) -> [String] {
        // One change at a time: the snapshot is always made of the latest of both sources.
        sources.withLock { sources in
            change(&sources)
            let made = Self.snapshot(yaml: sources.yaml, stored: sources.stored, seal: seal)
            install(made.snapshot)
            return made.conflicts
        }
    }

    private func install(_ made: Snapshot) {
        snapshot.withLock { current in
            // Keep the use marks of tokens that stay.
            for (id, entry) in made.byID {
                if let old = current.byID[id], old.token.sha256 == entry.token.sha256 {
                    entry.lastUsed.store(old.lastUsed.load(ordering: .relaxed), ordering: .relaxed)
                }
            }
            current = made
        }
    }

    /// When this node last saw each token presented (ids seen since start only).
    var lastUsed: [String: Int64] {
        snapshot.withLock { $0.byID }.compactMapValues {
            let t = $0.lastUsed.load(ordering: .relaxed)
            return t == 0 ? nil : t
        }
    }

    /// The store's tokens refused because their minter no longer stands (for the log).
    var orphans: [String] { snapshot.withLock { $0.orphans } }

    /// Every token (YAML first), for `GET /admin/tokens`.
    var all: [ServiceConfiguration.AccessToken] {
        snapshot.withLock { Array($0.byID.values) }.map(\.token).sorted {
            ($0.source.rawValue, $0.id) < ($1.source.rawValue, $1.id)
        }
    }

    private static func snapshot(
        yaml: [ServiceConfiguration.AccessToken], stored: [ServiceConfiguration.AccessToken], seal: CredentialSeal?
    ) -> (snapshot: Snapshot, conflicts: [String]) {
        var snapshot = Snapshot()
        var conflicts: [String] = []
        for token in yaml { insert(token, into: &snapshot) }
        let standings = APICredentials.standings(yaml: yaml, stored: stored, seal: seal)
        let yamlByID = Dictionary(yaml.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        let storedByID = Dictionary(stored.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        for token in stored {
            // A store token that breaks the two-person rule (written into the document and
            // signed as it was) is not honoured, whatever its standing.
            if ExportDuties.violation(scopes: token.scopes, person: token.person) != nil {
                snapshot.orphans.append(token.id)
                continue
            }
            guard snapshot.byID[token.id] == nil, standings[token.id] != .shadowed else {
                conflicts.append(token.id)
                continue
            }
            if standings[token.id] == .active {
                insert(inheriting(token, yaml: yamlByID, stored: storedByID), into: &snapshot)
            } else {
                snapshot.orphans.append(token.id)
            }
        }
        return (snapshot, conflicts)
    }

    /// `token` held to the access policies of the configured token at the root of the chain
    /// that minted it (issue 77): a minted token inherits every policy of its minter, and one
    /// given to the minter later reaches what it minted before. Only configured tokens name
    /// policies; a chain that does not end at one (an operator's token) leaves `token` as it is.
    static func inheriting(
        _ token: ServiceConfiguration.AccessToken, yaml: [String: ServiceConfiguration.AccessToken],
        stored: [String: ServiceConfiguration.AccessToken]
    ) -> ServiceConfiguration.AccessToken {
        guard var minter = token.mintedBy else { return token }
        // Bounded: a chain written into the store in a loop ends here, unrestricted by nothing
        // it could not already do (its standing is the credentials' check).
        for _ in 0..<64 {
            if let root = yaml[minter] {
                var held = token
                held.policies = root.policies
                held.access = root.access
                return held
            }
            guard let next = stored[minter]?.mintedBy else { return token }
            minter = next
        }
        return token
    }

    private static func insert(_ token: ServiceConfiguration.AccessToken, into snapshot: inout Snapshot) {
        let entry = Entry(token)
        snapshot.byID[token.id] = entry
        // Two tokens with one secret: the first keeps it (the configuration reader refuses two in
        // auth.tokens; a store token's secret is random, never one of the YAML's).
        if snapshot.byDigest[token.sha256] == nil { snapshot.byDigest[token.sha256] = entry }
    }
}
