import CloakCrypto

extension Vault {
    /// What audit lines show for an alias: `ar_` and 16 hex digits of an HMAC under the vault's
    /// fingerprint key. An alias is a capability (with a reveal token, or through an egress route,
    /// it is the value), so the alias itself never reaches a log line; the reference still lets
    /// an operator follow one alias through the lines (`cloak keys ref ALIAS` computes it from
    /// the key ring, on every node that shares it).
    /// The fingerprint key is one no rotation changes: read without the ring's lock (a copy of
    /// the whole ring under its mutex, each audited alias, was what this cost before).
    package func auditReference(_ alias: String) -> String { Self.auditReference(alias, mac: fingerprintMAC) }

    package static func auditReference(_ alias: String, keys: KeyRing) -> String {
        auditReference(alias, mac: keys.fingerprintMAC)
    }

    static func auditReference(_ alias: String, mac key: HMACKey) -> String {
        var message = "cloak/v1/audit\0" + alias
        let mac = message.withUTF8 { key.authenticate(UnsafeRawBufferPointer($0)) }
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = Array("ar_".utf8)
        for byte in mac.prefix(8) {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
