import CloakCrypto
import CloakVault

/// The key that authenticates what the store holds about API credentials: an HMAC key derived
/// from the key ring's fingerprint key for the purpose `api-credentials`, as alias rows are
/// signed with a key derived from it (``KeyRing/aliasMAC``). Every node and every `cloak tokens`
/// command that opens the ring has it; a database writer without the ring has not, so a
/// document it writes (a digest of a secret it knows, with `aliases:reveal`) does not verify
/// and no node adopts it (``APICredentials/open(_:seal:)``).
///
/// Two uses, kept apart by a prefix of the MAC's input:
/// - `document\n` + the document's canonical bytes (``APICredentials/canonical()``): its MAC.
/// - `minter\n` + a minting token's SHA-256: the tag a minted token keeps of its minter's
///   secret (``APICredentials/minterTag``), so a minter given a new secret under the same id (a
///   leaked YAML token replaced) no longer vouches for what the old secret minted. Keyed, so the
///   store holds nothing a reader could test a guessed YAML secret against.
package struct CredentialSeal: Sendable {
    let key: HMACKey

    /// The purpose the key is derived for (``KeyRing/derivedMAC(purpose:)``).
    package static let purpose = "api-credentials"

    /// The seal of the ring a command opened.
    package init(ring: KeyRing) { self.key = ring.derivedMAC(purpose: Self.purpose) }

    /// The seal of the ring a node's vault opened with (the same key as the ring's).
    package init(vault: Vault) { self.key = vault.derivedMAC(purpose: Self.purpose) }

    /// The MAC of a document's canonical bytes.
    func mac(document canonical: [UInt8]) -> [UInt8] {
        key.authenticate(Array("document\n".utf8) + canonical)
    }

    /// Whether `mac` is the MAC of `canonical` (constant time).
    func verifies(_ canonical: [UInt8], mac: [UInt8]) -> Bool {
        mac.count == 32 && constantTimeEquals(mac, self.mac(document: canonical))
    }

    /// What a minted token keeps of its minter's secret: 16 bytes of a MAC of its SHA-256.
    func minterTag(_ minterSHA256: [UInt8]) -> [UInt8] {
        Array(key.authenticate(Array("minter\n".utf8) + minterSHA256).prefix(16))
    }
}
