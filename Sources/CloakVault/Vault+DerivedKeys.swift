import CloakCrypto

extension Vault {
    /// An HMAC key for `purpose`, derived from the key ring's fingerprint key: the same on every
    /// node that shares the key ring, unrelated to any other purpose's key, and never the key
    /// itself (e.g. signing Cloak Elements' reveal sessions so that any node accepts them). The
    /// same key as ``KeyRing/derivedMAC(purpose:)`` of the ring the vault opened with.
    package func derivedMAC(purpose: String) -> HMACKey {
        HMACKey(fingerprintKey.derive(KeyRing.purposeLabel(purpose)))
    }
}
