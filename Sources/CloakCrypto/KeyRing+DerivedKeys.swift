extension KeyRing {
    /// The label of `purpose`'s key, derived from the fingerprint key (``derivedMAC(purpose:)``).
    package static func purposeLabel(_ purpose: String) -> String { "cloak/v1/purpose/" + purpose }

    /// An HMAC key for `purpose`, derived from the fingerprint key: the same on every node and
    /// every command that opens this ring (it never rotates), unrelated to any other purpose's
    /// key, and never the key itself. `Vault.derivedMAC(purpose:)` gives the same key from an
    /// open vault; a command that opens only the ring (`cloak tokens`) uses this one.
    package func derivedMAC(purpose: String) -> HMACKey {
        HMACKey(fingerprintKey.derive(Self.purposeLabel(purpose)))
    }
}
