import Foundation

/// The ring as a store keeps it: ids, dates and which is current in clear; every secret (each
/// data key's and the fingerprint key) wrapped by a ``KeyWrapping``. Every node of a cluster
/// reads the same ring from the store and needs only the wrapping key (or the token and PIN).
///
/// ```json
/// {"format": 2, "wrapping": "pkcs11", "location": "token=cloak;object=kek", "check": "…",
///  "current": "k2", "fingerprint_key": "…", "keys": [{"id": "k1", "created_at": "…", "secret": "…"}]}
/// ```
///
/// `check` is a known value wrapped under the key: opening it tells "another wrapping key" apart
/// from a damaged ring.
extension KeyRing {
    private struct Wrapped: Codable {
        var format: Int
        var wrapping: String
        var location: String
        var check: String
        var current: String
        var fingerprint_key: String
        var keys: [StoredKeyEntry]
    }

    private static let checkPlaintext = Array("cloak/v2/wrapping-key-check".utf8)

    /// The ring with every secret wrapped by `wrapping`, as JSON bytes.
    package func wrapped(by wrapping: some KeyWrapping) throws(Error) -> [UInt8] {
        var entries: [StoredKeyEntry] = []
        for key in keys {
            let secret = try wrapping.wrap(key.secret.rawBytes, context: "cloak/v2/data-key/" + key.id)
            entries.append(.init(id: key.id, created_at: key.createdAt, secret: Data(secret).base64EncodedString()))
        }
        let file = Wrapped(
            format: 2, wrapping: wrapping.kind, location: wrapping.location,
            check: Data(try wrapping.wrap(Self.checkPlaintext, context: "cloak/v2/check")).base64EncodedString(),
            current: currentID,
            fingerprint_key: Data(try wrapping.wrap(fingerprintKey.rawBytes, context: "cloak/v2/fingerprint-key"))
                .base64EncodedString(),
            keys: entries)
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys]
        guard let data = try? encoder.encode(file) else { throw Error("cannot encode the key ring") }
        return Array(data)
    }

    /// What wrapped a stored ring (`file`, `env`, `pkcs11`) and where, read without any key.
    package static func wrapping(of bytes: [UInt8]) throws(Error) -> (kind: String, location: String) {
        let ring = try decode(bytes)
        return (ring.wrapping, ring.location)
    }

    /// The ids of a stored ring's versions and its current one, read without any key.
    package static func versions(of bytes: [UInt8]) throws(Error) -> (ids: [String], current: String) {
        let ring = try decode(bytes)
        return (ring.keys.map(\.id), ring.current)
    }

    /// Opens a stored ring.
    /// - Throws: when `wrapping` is not the key that wrapped it (named by kind and location, as
    ///   the ring records them), or the ring is damaged.
    package static func unwrapped(_ bytes: [UInt8], by wrapping: some KeyWrapping) throws(Error) -> KeyRing {
        let ring = try decode(bytes)
        guard let check = Data(base64Encoded: ring.check).map(Array.init),
            (try? wrapping.unwrap(check, context: "cloak/v2/check")) == checkPlaintext
        else {
            throw Error(
                "the store's key ring is wrapped by another key (\(ring.wrapping): \(ring.location)), "
                    + "not by \(wrapping.kind): \(wrapping.location)")
        }
        func open(_ text: String, _ context: String) throws(Error) -> SymmetricKey {
            guard let sealed = Data(base64Encoded: text).map(Array.init) else {
                throw Error("the stored key ring is damaged")
            }
            let raw = try wrapping.unwrap(sealed, context: context)
            guard raw.count == 32 else { throw Error("the stored key ring is damaged") }
            return SymmetricKey(raw)
        }
        var keys: [DataKey] = []
        for entry in ring.keys {
            keys.append(
                DataKey(
                    id: entry.id, createdAt: entry.created_at,
                    secret: try open(entry.secret, "cloak/v2/data-key/" + entry.id)))
        }
        guard keys.contains(where: { $0.id == ring.current }), Set(keys.map(\.id)).count == keys.count else {
            throw Error("the stored key ring is damaged: its current key is not one of its keys")
        }
        return KeyRing(
            keys: keys, currentID: ring.current,
            fingerprintKey: try open(ring.fingerprint_key, "cloak/v2/fingerprint-key"))
    }

    private static func decode(_ bytes: [UInt8]) throws(Error) -> Wrapped {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        guard let ring = try? decoder.decode(Wrapped.self, from: Data(bytes)), ring.format == 2 else {
            throw Error("the store's key ring is not a Cloak key ring (format 2)")
        }
        return ring
    }

    /// The ring without `id`.
    /// - Throws: for the current key, or an id the ring does not hold.
    package func retiring(_ id: String) throws(Error) -> KeyRing {
        guard id != currentID else { throw Error("\(id) is the current key; rotate first") }
        guard keys.contains(where: { $0.id == id }) else { throw Error("the key ring has no key \(id)") }
        return KeyRing(keys: keys.filter { $0.id != id }, currentID: currentID, fingerprintKey: fingerprintKey)
    }

    /// The software wrapping key of a ring from a version 1 key file (its data keys in clear):
    /// derived from the file's fingerprint key, so the same file always opens what it wrapped.
    package var fileWrappingKey: SymmetricKey { fingerprintKey.derive("cloak/v2/wrapping-key") }

    /// The software wrapping key of a master key in the environment (64 hex characters or base64).
    package static func wrappingKey(fromMaster text: String) throws(Error) -> SymmetricKey {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        let bytes = decodeHex(trimmed) ?? Data(base64Encoded: trimmed).map(Array.init)
        guard let bytes, bytes.count == 32 else {
            throw Error("the master key must be 32 bytes, as 64 hexadecimal characters or base64")
        }
        return SymmetricKey(bytes).derive("cloak/v2/wrapping-key")
    }
}
