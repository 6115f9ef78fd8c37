import CloakCore
import CloakCrypto
import CloakHTTP
import CloakVault
import Foundation

/// Who sent a request: a configured token, an invalid one, or nobody.
struct Identity: Sendable {
    /// The token presented, when valid.
    let token: ServiceConfiguration.AccessToken?
    /// An `Authorization` header was sent that is not a valid bearer token.
    let rejected: Bool
    /// A bearer token was sent that no directory entry knows (yet: one made on another node
    /// reaches this one within `auth.refresh_s`, or at once by ``Door``'s one refresh).
    var unknownBearer = false
    /// What a token this caller creates may hold, when it is not `token.scopes`: a console
    /// session carries only the console's scopes but grants what its signed-in token holds.
    var grantable: Set<Scope>?

    static let anonymous = Identity(token: nil, rejected: false)

    /// The token's id, when it has `scope`.
    /// - Throws: 1300 when no valid token was presented, 1301 when the token lacks the scope.
    func require(_ scope: Scope) throws(CloakError) -> String { try requireAny([scope]) }

    /// The token's id, when it has any of `scopes`.
    /// - Throws: 1300 when no valid token was presented, 1301 when the token lacks them all.
    func requireAny(_ scopes: [Scope]) throws(CloakError) -> String {
        guard let token else {
            throw CloakError(
                .invalidAccessToken,
                rejected
                    ? "the bearer token is not valid"
                    : "a bearer token is required (Authorization: Bearer <token>)")
        }
        guard scopes.contains(where: token.scopes.contains) else {
            let named = scopes.map(\.text).joined(separator: " or ")
            throw CloakError(.forbidden, "the token \(token.id) lacks the scope \(named)")
        }
        return token.id
    }

    /// Whether the caller holds a token with `aliases:create`: the only caller that gets
    /// deterministic, deduplicated aliases and a token's rate bucket on an open endpoint.
    var isCreator: Bool { token?.scopes.contains(.aliasesCreate) ?? false }

    /// The caller of an endpoint that stores values: a token with `aliases:create` when
    /// `openTokenize` is off; anyone otherwise. On an open endpoint every caller without
    /// `aliases:create` is exactly an anonymous one (random aliases, small alias spaces refused),
    /// whatever else its token may do: a deterministic alias for a token that may only pay
    /// (`egress:psp`) or delete would let it find a card from its alias by trying candidates.
    func aliasCaller(openTokenize: Bool, requiresToken: Bool = false) throws(CloakError) -> AliasCaller {
        if requiresToken || !openTokenize { _ = try require(.aliasesCreate) }
        guard isCreator else { return .anonymous }
        return AliasCaller(mayReveal: token?.scopes.contains(.aliasesReveal) ?? false, anonymous: false)
    }
}

/// Bearer-token authentication against the YAML's `auth.tokens` and the store's API
/// credentials (``TokenDirectory``): each is kept as its SHA-256 only; scopes decide what a
/// token may do.
struct Authenticator: Sendable {
    let directory: TokenDirectory

    init(directory: TokenDirectory) { self.directory = directory }

    init(tokens: [ServiceConfiguration.AccessToken]) { self.directory = TokenDirectory(yaml: tokens) }

    /// Identifies the request's caller once; handlers then ask the ``Identity`` for scopes.
    func identify(_ request: HTTPRequest) -> Identity {
        guard var header = request.header("Authorization") else { return .anonymous }
        return header.withUTF8 { bytes in
            guard Self.hasScheme(bytes, Self.bearer) else { return Identity(token: nil, rejected: true) }
            let match = token(presenting: UnsafeRawBufferPointer(Self.trimmingSpaces(bytes, from: Self.bearer.count)))
            return Identity(token: match, rejected: match == nil, unknownBearer: match == nil)
        }
    }

    /// `bytes` from `start` without leading and trailing spaces and tabs.
    static func trimmingSpaces(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> UnsafeBufferPointer<UInt8> {
        var lower = start, upper = bytes.count
        while lower < upper, bytes[lower] == 0x20 || bytes[lower] == 0x09 { lower += 1 }
        while upper > lower, bytes[upper - 1] == 0x20 || bytes[upper - 1] == 0x09 { upper -= 1 }
        return UnsafeBufferPointer(rebasing: bytes[lower..<upper])
    }

    static let bearer = Array("bearer ".utf8)
    static let basic = Array("basic ".utf8)

    /// Whether `bytes` start with `scheme` (lowercase, with its space), in any case, and go on.
    static func hasScheme<Bytes: RandomAccessCollection<UInt8>>(_ bytes: Bytes, _ scheme: [UInt8]) -> Bool {
        bytes.count > scheme.count && zip(bytes, scheme).allSatisfy { $0 | 0x20 == $1 }
    }

    /// The token whose SHA-256 is the presented secret's, unless it expired.
    func token(presenting secret: [UInt8]) -> ServiceConfiguration.AccessToken? {
        secret.withUnsafeBytes { token(presenting: $0) }
    }

    func token(presenting secret: UnsafeRawBufferPointer) -> ServiceConfiguration.AccessToken? {
        directory.token(digest: Digest.sha256(secret))
    }
}

extension Authenticator {
    /// The caller of an egress door, from `Proxy-Authorization`: `Basic base64(<token id>:<token>)`
    /// or `Bearer <token>` (the client's `Authorization` belongs to the upstream). With Basic, the
    /// id must name the token whose secret it is.
    func identifyProxy(_ header: String?) -> Identity {
        guard let header else { return .anonymous }
        let bytes = Array(header.utf8).trimmingSpaces()
        var claimedID: [UInt8]?
        let secret: [UInt8]
        if Self.hasScheme(bytes, Self.basic) {
            guard let data = Data(base64Encoded: Data(bytes.dropFirst(Self.basic.count).trimmingSpaces())),
                let colon = data.firstIndex(of: UInt8(ascii: ":"))
            else { return Identity(token: nil, rejected: true) }
            claimedID = Array(data[..<colon])
            secret = Array(data[(colon + 1)...])
        } else if Self.hasScheme(bytes, Self.bearer) {
            secret = bytes.dropFirst(Self.bearer.count).trimmingSpaces()
        } else {
            return Identity(token: nil, rejected: true)
        }
        var match = token(presenting: secret)
        if let claimedID, let found = match, Array(found.id.utf8) != claimedID { match = nil }
        return Identity(token: match, rejected: match == nil)
    }
}

extension Authenticator {
    /// Whether an `Authorization` value carries a Cloak token's secret in any form a client
    /// might send it: `Bearer <token>`, or `Basic` with the token as the password (any user) or
    /// as the whole credential.
    func holdsToken(_ header: String) -> Bool {
        let bytes = Array(header.utf8).trimmingSpaces()
        if Self.hasScheme(bytes, Self.bearer) {
            return token(presenting: bytes.dropFirst(Self.bearer.count).trimmingSpaces()) != nil
        }
        if Self.hasScheme(bytes, Self.basic),
            let data = Data(base64Encoded: Data(bytes.dropFirst(Self.basic.count).trimmingSpaces()))
        {
            let decoded = Array(data)
            if token(presenting: decoded) != nil { return true }
            if let colon = decoded.firstIndex(of: UInt8(ascii: ":")),
                token(presenting: Array(decoded[(colon + 1)...])) != nil
            {
                return true
            }
        }
        return token(presenting: bytes) != nil  // a bare token
    }
}

extension Identity {
    /// Whether the token may use egress route `id` (`egress:<id>` or `egress:*`). Never a token
    /// held to access policies (issue 77): the egress doors and tunnels do not judge them yet.
    func mayUseEgress(_ id: String) -> Bool {
        guard let token, !token.access.isRestricted else { return false }
        return token.scopes.contains(.egressAll) || token.scopes.contains(.egress(id))
    }
}

extension BidirectionalCollection<UInt8> {
    /// Without leading and trailing spaces and tabs (one copy: it runs on every egress request).
    func trimmingSpaces() -> [UInt8] {
        let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else {
            return []
        }
        return Array(self[first...last])
    }
}
