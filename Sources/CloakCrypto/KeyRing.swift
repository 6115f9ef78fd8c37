import Foundation

/// The vault's keys: versioned data keys (one current) and a fingerprint key that never rotates.
///
/// - Each data key has an id; records remember the id they were sealed with, so rotating adds a
///   key and old records stay readable. Its secret is split by HMAC into an AES-256-GCM key and
///   an FF1 key.
/// - The fingerprint key makes deduplication keyed (HMAC, never a plain hash) and stable across
///   rotation: the same value and format always find the same alias.
///
/// Sources: a JSON file written by `cloak keys init` (mode 0600, and refused when group or others
/// can read or write it), or a 32-byte master secret in an environment variable from which a
/// one-key ring is derived.
package struct KeyRing: Sendable {
    package struct DataKey: Sendable {
        package let id: String
        package let createdAt: Date
        package let encryptionKey: SymmetricKey
        package let ff1Key: SymmetricKey
        let secret: SymmetricKey

        init(id: String, createdAt: Date, secret: SymmetricKey) {
            self.id = id
            self.createdAt = createdAt
            self.secret = secret
            self.encryptionKey = secret.derive("cloak/v1/aes-256-gcm")
            self.ff1Key = secret.derive("cloak/v1/ff1")
        }
    }

    package let keys: [DataKey]
    package let currentID: String
    package let fingerprintKey: SymmetricKey
    /// The fingerprint key made ready for HMAC (``HMACKey``).
    package let fingerprintMAC: HMACKey
    /// Signs alias rows (alias → record). Derived from the fingerprint key, so it never rotates.
    package let aliasMAC: HMACKey

    init(keys: [DataKey], currentID: String, fingerprintKey: SymmetricKey) {
        self.keys = keys
        self.currentID = currentID
        self.fingerprintKey = fingerprintKey
        self.fingerprintMAC = HMACKey(fingerprintKey)
        self.aliasMAC = HMACKey(fingerprintKey.derive("cloak/v1/alias-mac"))
    }

    package var current: DataKey { keys.first { $0.id == currentID }! }

    package func key(id: String) -> DataKey? { keys.first { $0.id == id } }

    /// A value a store keeps to recognise the ring that wrote it: the same for every rotation of
    /// a ring (it follows the fingerprint key), different for any other ring, and useless for
    /// recovering a key (an HMAC output).
    package var checkValue: [UInt8] { fingerprintKey.derive("cloak/v1/key-check").rawBytes }

    package struct Error: Swift.Error, Sendable, CustomStringConvertible {
        package let description: String
        init(_ description: String) { self.description = description }
    }

    /// A new ring with one random key.
    package static func generate(now: Date = Date()) -> KeyRing {
        KeyRing(
            keys: [DataKey(id: "k1", createdAt: now, secret: .random())], currentID: "k1", fingerprintKey: .random())
    }

    /// The ring derived from a 32-byte master secret (64 hex characters or base64).
    package static func derived(fromMaster text: String) throws(Error) -> KeyRing {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        let bytes = decodeHex(trimmed) ?? Data(base64Encoded: trimmed).map(Array.init)
        guard let bytes, bytes.count == 32 else {
            throw Error("the master key must be 32 bytes, as 64 hexadecimal characters or base64")
        }
        let master = SymmetricKey(bytes)
        let id =
            "m-"
            + Digest.sha256(master.derive("cloak/v1/key-id").rawBytes).prefix(4).map { String(format: "%02x", $0) }
            .joined()
        return KeyRing(
            keys: [DataKey(id: id, createdAt: Date(timeIntervalSince1970: 0), secret: master.derive("cloak/v1/data"))],
            currentID: id, fingerprintKey: master.derive("cloak/v1/fingerprint"))
    }

    /// The number of a version id (`k7` is 7); 0 for a ring derived from a master key (`m-…`).
    /// Rotation numbers versions upward, so a later current version has a larger number.
    package static func versionNumber(_ id: String) -> Int {
        id.hasPrefix("k") ? Int(id.dropFirst()) ?? 0 : 0
    }

    /// When `id` stopped being current: the creation of the version made after it (nil while it is
    /// current, or when none follows it in the ring).
    package func retiredFromCurrent(_ id: String) -> Date? {
        guard id != currentID else { return nil }
        let number = Self.versionNumber(id)
        return keys.filter { Self.versionNumber($0.id) > number }.map(\.createdAt).min()
    }

    /// A ring with a new random key added and made current.
    package func rotated(now: Date = Date()) -> KeyRing {
        let next = (keys.compactMap { $0.id.hasPrefix("k") ? Int($0.id.dropFirst()) : nil }.max() ?? 0) + 1
        let key = DataKey(id: "k\(next)", createdAt: now, secret: .random())
        return KeyRing(keys: keys + [key], currentID: key.id, fingerprintKey: fingerprintKey)
    }

    // MARK: File

    /// One data key as a file or the store keeps it: its secret in base64, in clear (a version 1
    /// key file) or wrapped (``wrapped(by:)``).
    struct StoredKeyEntry: Codable {
        var id: String
        var created_at: Date
        var secret: String
    }

    private struct File: Codable {
        var format: Int
        var current: String
        var fingerprint_key: String
        var keys: [StoredKeyEntry]
    }

    /// Reads a key file. A file group or others may read or write is refused, as ssh refuses
    /// such a private key: "data/keys.json is readable by group or others (mode 0644); run chmod
    /// 600 data/keys.json" (the mode is checked on the opened file).
    package static func load(path: String) throws(Error) -> KeyRing {
        let data: Data
        do throws(SecretFile.ReadFailure) {
            data = try Data(SecretFile.read(path))
        } catch {
            throw Error(error.message(path: path))
        }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        guard let file = try? decoder.decode(File.self, from: data), file.format == 1 else {
            throw Error("\(path) is not a Cloak key file (format 1)")
        }
        var keys: [DataKey] = []
        for entry in file.keys {
            guard let secret = Data(base64Encoded: entry.secret), secret.count == 32 else {
                throw Error("\(path): key \(entry.id) is not 32 bytes of base64")
            }
            keys.append(DataKey(id: entry.id, createdAt: entry.created_at, secret: SymmetricKey(Array(secret))))
        }
        guard let fp = Data(base64Encoded: file.fingerprint_key), fp.count == 32 else {
            throw Error("\(path): fingerprint_key is not 32 bytes of base64")
        }
        guard keys.contains(where: { $0.id == file.current }), Set(keys.map(\.id)).count == keys.count else {
            throw Error("\(path): the current key must be one of the keys, and ids must be unique")
        }
        return KeyRing(keys: keys, currentID: file.current, fingerprintKey: SymmetricKey(Array(fp)))
    }

    /// Writes the ring to a new file with mode 0600.
    /// - Parameter replace: false refuses to touch an existing file (`keys init`); true replaces it
    ///   atomically (`keys rotate`).
    package func write(path: String, replace: Bool) throws(Error) {
        let file = File(
            format: 1, current: currentID, fingerprint_key: Data(fingerprintKey.rawBytes).base64EncodedString(),
            keys: keys.map {
                .init(id: $0.id, created_at: $0.createdAt, secret: Data($0.secret.rawBytes).base64EncodedString())
            })
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        guard let data = try? encoder.encode(file) else { throw Error("cannot encode the key file") }
        do {
            try SecretFile.write(Array(data), to: path, mode: 0o600, replace: replace)
        } catch .exists {
            throw Error("\(path) already exists; refusing to overwrite keys")
        } catch .cannotCreate {
            throw Error("cannot create \(path)")
        } catch .cannotReplace {
            throw Error("cannot replace \(path)")
        } catch {
            throw Error("cannot write \(path)")
        }
    }
}

/// Bytes from hexadecimal text (either case); nil for odd lengths or other characters.
package func decodeHex(_ text: String) -> [UInt8]? {
    let chars = Array(text.utf8)
    guard chars.count % 2 == 0, !chars.isEmpty else { return nil }
    var out: [UInt8] = []
    out.reserveCapacity(chars.count / 2)
    var i = 0
    while i < chars.count {
        guard let hi = hexNibble(chars[i]), let lo = hexNibble(chars[i + 1]) else { return nil }
        out.append(hi << 4 | lo)
        i += 2
    }
    return out
}

private func hexNibble(_ c: UInt8) -> UInt8? {
    switch c {
    case 48...57: return c - 48
    case 97...102: return c - 87
    case 65...70: return c - 55
    default: return nil
    }
}
