import Foundation
import Testing

@testable import CloakCrypto

/// A fresh folder under the system's temporary directory, removed by `remove()`.
private struct ScratchFolder {
    let path = NSTemporaryDirectory() + "cloak-keyring-" + UUID().uuidString
    init() { try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true) }
    func remove() { try? FileManager.default.removeItem(atPath: path) }
}

private func mode(_ path: String) -> Int? {
    (try? FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue
}

private func hexString(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

@Suite struct KeyRingTests {
    // MARK: File

    @Test func writeCreatesAnOwnerOnlyFileAndRefusesToOverwrite() throws {
        let folder = ScratchFolder()
        defer { folder.remove() }
        let path = folder.path + "/keys/keys.json"
        let ring = KeyRing.generate()
        try ring.write(path: path, replace: false)
        #expect(mode(path) == 0o600)
        #expect(mode(folder.path + "/keys") == 0o700)

        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        let error = try #require(throws: KeyRing.Error.self) {
            try KeyRing.generate().write(path: path, replace: false)
        }
        #expect(error.description.contains("already exists"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before, "the existing key file was changed")
    }

    @Test func writeRefusesAnExistingFileItDidNotCreate() throws {
        let folder = ScratchFolder()
        defer { folder.remove() }
        let path = folder.path + "/keys.json"
        try Data("{}".utf8).write(to: URL(fileURLWithPath: path))
        #expect(throws: KeyRing.Error.self) { try KeyRing.generate().write(path: path, replace: false) }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data("{}".utf8))
    }

    @Test func replaceSwapsTheFileAtomicallyWithMode0600() throws {
        let folder = ScratchFolder()
        defer { folder.remove() }
        let path = folder.path + "/keys.json"
        let ring = KeyRing.generate()
        try ring.write(path: path, replace: false)
        let rotated = ring.rotated()
        try rotated.write(path: path, replace: true)
        #expect(mode(path) == 0o600)
        #expect(!FileManager.default.fileExists(atPath: path + ".tmp"))
        let loaded = try KeyRing.load(path: path)
        #expect(loaded.keys.map(\.id) == ["k1", "k2"])
        #expect(loaded.currentID == "k2")
    }

    @Test func loadRoundTripsIdsCurrentAndKeys() throws {
        let folder = ScratchFolder()
        defer { folder.remove() }
        let path = folder.path + "/keys.json"
        let ring = KeyRing.generate().rotated().rotated()
        try ring.write(path: path, replace: false)
        let loaded = try KeyRing.load(path: path)
        #expect(loaded.keys.map(\.id) == ["k1", "k2", "k3"])
        #expect(loaded.currentID == "k3")
        #expect(loaded.current.id == "k3")
        #expect(loaded.fingerprintKey == ring.fingerprintKey)
        for (a, b) in zip(loaded.keys, ring.keys) {
            #expect(a.encryptionKey == b.encryptionKey)
            #expect(a.ff1Key == b.ff1Key)
            #expect(abs(a.createdAt.timeIntervalSince(b.createdAt)) < 1)
        }
        // What one ring sealed, the loaded ring opens.
        let box = try AESGCM.seal([1, 2, 3], key: ring.key(id: "k2")!.encryptionKey, associatedData: [9])
        #expect(try AESGCM.open(box, key: loaded.key(id: "k2")!.encryptionKey, associatedData: [9]) == [1, 2, 3])
    }

    @Test(
        arguments: [
            ("missing", nil),
            ("not json", "hello"),
            ("wrong format", #"{"format":2,"current":"k1","fingerprint_key":"","keys":[]}"#),
            (
                "current not a key",
                #"{"format":1,"current":"k9","fingerprint_key":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=","keys":[{"id":"k1","created_at":"2024-01-01T00:00:00Z","secret":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}]}"#
            ),
            (
                "short secret",
                #"{"format":1,"current":"k1","fingerprint_key":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=","keys":[{"id":"k1","created_at":"2024-01-01T00:00:00Z","secret":"AAAA"}]}"#
            ),
            (
                "duplicate ids",
                #"{"format":1,"current":"k1","fingerprint_key":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=","keys":[{"id":"k1","created_at":"2024-01-01T00:00:00Z","secret":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="},{"id":"k1","created_at":"2024-01-01T00:00:00Z","secret":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}]}"#
            ),
        ] as [(String, String?)])
    func loadRejectsBrokenFiles(_ name: String, _ contents: String?) throws {
        let folder = ScratchFolder()
        defer { folder.remove() }
        let path = folder.path + "/keys.json"
        if let contents {
            try Data(contents.utf8).write(to: URL(fileURLWithPath: path))
            // Owner-only, so the content is what is refused (a 0644 file is refused for its mode).
            #expect(chmod(path, 0o600) == 0)
        }
        let error = try #require(throws: KeyRing.Error.self) { _ = try KeyRing.load(path: path) }
        #expect(!error.description.contains("AAAAAAAAAAAAAAAA"), "\(name): the error repeats key material")
    }

    // MARK: File mode

    /// As ssh refuses a private key others can read: the error names the file, its mode and the
    /// command that fixes it.
    @Test(arguments: [
        (0o644, "readable"), (0o640, "readable"), (0o604, "readable"), (0o660, "readable"),
        (0o620, "writable"), (0o602, "writable"), (0o610, "accessible"), (0o601, "accessible"),
    ])
    func aKeyFileGroupOrOthersCanUseIsRefused(mode: Int, access: String) throws {
        let folder = ScratchFolder()
        defer { folder.remove() }
        let path = folder.path + "/keys.json"
        try KeyRing.generate().write(path: path, replace: false)
        #expect(chmod(path, mode_t(mode)) == 0)
        let error = try #require(throws: KeyRing.Error.self) { _ = try KeyRing.load(path: path) }
        let shown = "0" + String(mode, radix: 8)
        #expect(error.description == "\(path) is \(access) by group or others (mode \(shown)); run chmod 600 \(path)")
    }

    @Test(arguments: [0o600, 0o400, 0o700])
    func aKeyFileOnlyItsOwnerCanUseLoads(mode: Int) throws {
        let folder = ScratchFolder()
        defer { folder.remove() }
        let path = folder.path + "/keys.json"
        let ring = KeyRing.generate()
        try ring.write(path: path, replace: false)
        #expect(chmod(path, mode_t(mode)) == 0)
        #expect(try KeyRing.load(path: path).fingerprintKey == ring.fingerprintKey)
    }

    /// The one a test suite or a hand-copied file would make: `Data.write` with the default umask.
    @Test func aKeyFileWrittenWithDefaultPermissionsIsRefusedUntilChmodded() throws {
        let folder = ScratchFolder()
        defer { folder.remove() }
        let path = folder.path + "/keys.json"
        try KeyRing.generate().write(path: path + ".orig", replace: false)
        try Data(contentsOf: URL(fileURLWithPath: path + ".orig")).write(to: URL(fileURLWithPath: path))
        #expect(chmod(path, 0o644) == 0)
        let error = try #require(throws: KeyRing.Error.self) { _ = try KeyRing.load(path: path) }
        #expect(error.description.contains("chmod 600 \(path)"), "\(error)")
        #expect(chmod(path, 0o600) == 0)
        _ = try KeyRing.load(path: path)
    }

    /// The hint is a command to paste: a path with a space is quoted.
    @Test func theChmodHintQuotesAPathWithSpaces() throws {
        let folder = ScratchFolder()
        defer { folder.remove() }
        let path = folder.path + "/my keys.json"
        try KeyRing.generate().write(path: path, replace: false)
        #expect(chmod(path, 0o644) == 0)
        let error = try #require(throws: KeyRing.Error.self) { _ = try KeyRing.load(path: path) }
        #expect(error.description.hasSuffix("run chmod 600 '\(path)'"), "\(error)")
    }

    /// Files Cloak makes are owner-only from the start, replaced or not, whatever the umask allows.
    @Test func filesCloakWritesAreOwnerOnlyAndLoad() throws {
        let folder = ScratchFolder()
        defer { folder.remove() }
        let path = folder.path + "/keys.json"
        let ring = KeyRing.generate()
        try ring.write(path: path, replace: false)
        #expect(mode(path) == 0o600)
        _ = try KeyRing.load(path: path)
        try ring.rotated().write(path: path, replace: true)
        #expect(mode(path) == 0o600)
        #expect(try KeyRing.load(path: path).keys.count == 2)
    }

    @Test func aDirectoryIsNoKeyFile() throws {
        let folder = ScratchFolder()
        defer { folder.remove() }
        #expect(chmod(folder.path, 0o700) == 0)
        let error = try #require(throws: KeyRing.Error.self) { _ = try KeyRing.load(path: folder.path) }
        #expect(error.description.contains("not a regular file"), "\(error)")
    }

    // MARK: Rotation

    @Test func rotatedAddsANewCurrentKeyAndKeepsTheOldOnesAndTheFingerprintKey() {
        let ring = KeyRing.generate()
        #expect(ring.keys.map(\.id) == ["k1"])
        #expect(ring.current.id == "k1")
        let rotated = ring.rotated()
        #expect(rotated.keys.map(\.id) == ["k1", "k2"])
        #expect(rotated.currentID == "k2")
        #expect(rotated.current.id == "k2")
        #expect(rotated.fingerprintKey == ring.fingerprintKey)
        #expect(rotated.key(id: "k1")?.encryptionKey == ring.key(id: "k1")?.encryptionKey)
        #expect(rotated.key(id: "k1")?.ff1Key == ring.key(id: "k1")?.ff1Key)
        #expect(rotated.current.encryptionKey != ring.current.encryptionKey)
        #expect(rotated.key(id: "k3") == nil)
        #expect(ring.keys.count == 1, "rotated() changed the original ring")
    }

    @Test func eachKeySplitsIntoDistinctEncryptionAndFF1Keys() {
        let ring = KeyRing.generate()
        #expect(ring.current.encryptionKey.count == 32)
        #expect(ring.current.ff1Key.count == 32)
        #expect(ring.current.encryptionKey != ring.current.ff1Key)
        #expect(ring.fingerprintKey != ring.current.encryptionKey)
        #expect(KeyRing.generate().fingerprintKey != ring.fingerprintKey)
    }

    // MARK: Derivation from a master secret

    static let masterBytes: [UInt8] = (0..<32).map { UInt8($0 * 7 & 0xFF) }

    @Test func derivedAcceptsHexAndBase64OfTheSame32Bytes() throws {
        let fromHex = try KeyRing.derived(fromMaster: hexString(Self.masterBytes))
        let fromUpperHex = try KeyRing.derived(fromMaster: hexString(Self.masterBytes).uppercased())
        let fromBase64 = try KeyRing.derived(fromMaster: Data(Self.masterBytes).base64EncodedString())
        let padded = try KeyRing.derived(fromMaster: "  " + hexString(Self.masterBytes) + "\n")
        for other in [fromUpperHex, fromBase64, padded] {
            #expect(other.currentID == fromHex.currentID)
            #expect(other.fingerprintKey == fromHex.fingerprintKey)
            #expect(other.current.encryptionKey == fromHex.current.encryptionKey)
            #expect(other.current.ff1Key == fromHex.current.ff1Key)
        }
        #expect(fromHex.keys.count == 1)
        #expect(fromHex.currentID.hasPrefix("m-"))
    }

    @Test func derivedIsDeterministicAndDependsOnTheMaster() throws {
        let a = try KeyRing.derived(fromMaster: hexString(Self.masterBytes))
        let b = try KeyRing.derived(fromMaster: hexString(Self.masterBytes))
        #expect(a.currentID == b.currentID)
        #expect(a.fingerprintKey == b.fingerprintKey)
        #expect(a.current.encryptionKey == b.current.encryptionKey)
        var other = Self.masterBytes
        other[31] ^= 1
        let c = try KeyRing.derived(fromMaster: hexString(other))
        #expect(c.currentID != a.currentID)
        #expect(c.fingerprintKey != a.fingerprintKey)
        #expect(c.current.encryptionKey != a.current.encryptionKey)
        // The master itself is none of the keys.
        let master = SymmetricKey(Self.masterBytes)
        #expect(a.fingerprintKey != master && a.current.encryptionKey != master && a.current.ff1Key != master)
    }

    @Test(arguments: [
        ("empty", ""),
        ("31 bytes of hex", hexString(Array(repeating: 0xAB, count: 31))),
        ("33 bytes of hex", hexString(Array(repeating: 0xAB, count: 33))),
        ("63 hex characters", String(hexString(Array(repeating: 0xAB, count: 32)).dropLast())),
        ("16 bytes of base64", Data(repeating: 1, count: 16).base64EncodedString()),
        ("48 bytes of base64", Data(repeating: 1, count: 48).base64EncodedString()),
        ("not hex nor base64", "this is not a key!"),
        ("a passphrase", "correct horse battery staple"),
    ])
    func derivedRejectsAnythingButThirtyTwoBytes(_ name: String, _ text: String) throws {
        let error = try #require(throws: KeyRing.Error.self) { _ = try KeyRing.derived(fromMaster: text) }
        #expect(error.description.contains("32 bytes"))
        if !text.isEmpty { #expect(!error.description.contains(text), "\(name): the error repeats the input") }
    }

    // MARK: Redaction

    @Test func descriptionsNeverContainKeyBytes() throws {
        let rings = [KeyRing.generate().rotated(), try KeyRing.derived(fromMaster: hexString(Self.masterBytes))]
        for ring in rings {
            var secrets: [[UInt8]] = [ring.fingerprintKey.rawBytes]
            for key in ring.keys { secrets += [key.secret.rawBytes, key.encryptionKey.rawBytes, key.ff1Key.rawBytes] }
            if ring.currentID.hasPrefix("m-") { secrets.append(Self.masterBytes) }
            let texts = [
                "\(ring)", String(describing: ring), String(reflecting: ring),
                "\(ring.current)", String(reflecting: ring.current),
                "\(ring.fingerprintKey)", String(reflecting: ring.fingerprintKey),
                "\(ring.keys)", String(reflecting: ring.keys),
            ]
            for text in texts {
                for secret in secrets {
                    #expect(!text.lowercased().contains(hexString(secret)), "hex key bytes in \(text)")
                    #expect(!text.contains(Data(secret).base64EncodedString()), "base64 key bytes in \(text)")
                    #expect(
                        !text.contains(secret.map(String.init).joined(separator: ", ")), "decimal key bytes in \(text)")
                }
            }
            #expect("\(ring.fingerprintKey)" == "SymmetricKey(256 bits, redacted)")
        }
    }

    /// `dump()` walks a value's Mirror, not its description: a key must not reflect its bytes either.
    @Test func dumpNeverRevealsKeyBytes() {
        var keyText = ""
        dump(SymmetricKey.random(), to: &keyText)
        var ringText = ""
        dump(KeyRing.generate(), to: &ringText)
        // dump lists an array child as "bytes: 32 elements" followed by one line per byte.
        #expect(!keyText.contains("32 elements"), "dump(SymmetricKey) lists the key bytes:\n\(keyText.prefix(300))")
        #expect(!ringText.contains("32 elements"), "dump(KeyRing) lists the key bytes")
    }
}
