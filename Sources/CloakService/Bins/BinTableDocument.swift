import CloakCore
import CloakCrypto
import CloakVault
import Foundation

/// The BIN table in the store (issue 48): one versioned document every node reads, so all of
/// them, on SQLite or PostgreSQL, swap to a new import within `bins.refresh_s`.
///
/// Two named values beside the records:
/// - `bins.table.<version>`: the table, encoded (``BinTableReader/Table/encoded()``: about 11 MiB
///   for 350,000 ranges, read without parsing text);
/// - `bins.current`: this header, naming the version, its row count, source, import time and
///   the table's SHA-256, with a MAC under a key derived from the key ring (purpose `bin-table`).
///
/// An import writes the table under its new version first, then moves `bins.current` to it
/// (compare-and-set), so a node reads either the old table or the new one, never a mix; a
/// refused import leaves `bins.current` as it was. A database writer without the ring cannot
/// make nodes adopt a table of its own (the MAC), nor a changed one (the digest).
package struct BinTableDocument: Sendable, Equatable {
    package var version: Int64
    package var rows: Int
    package var source: String
    package var importedAt: Int64
    package var digest: [UInt8]
    package var mac: [UInt8] = []
    /// The table of the header before (kept one import longer, then cleared). Outside the MAC in
    /// headers written before issue 57; under it, with ``previousDigest``, since.
    package var previousTable: String?
    /// The SHA-256 of the table before, when its header verified at this import: what `cloak
    /// bins rollback` checks the kept table against (a database writer cannot have it sign a
    /// table of its own).
    package var previousDigest: [UInt8]?

    package static let pointerName = "bins.current"
    /// The names every table is kept under start so: the highest version among them is how far
    /// this store's imports went (names stay when a table is cleared).
    package static let tablePrefix = "bins.table."

    /// The highest version a table of `names` (``tablePrefix`` + version + `.` + digest) has.
    static func highestVersion(_ names: [String]) -> Int64 {
        names.compactMap { name in
            Int64(name.dropFirst(tablePrefix.count).prefix { $0 != "." })
        }.max() ?? 0
    }

    /// The start of the digest, in hex: with the version, what names a table on every node
    /// (the metric's label, `cloak bins status`).
    package var shortDigest: String { Self.hex(Array(digest.prefix(8))) }
    /// Where the table of a header is: its version and the start of its digest, so two imports
    /// racing to one version never write (or clear) each other's table.
    package var tableName: String { "\(Self.tablePrefix)\(version).\(shortDigest)" }
    /// The purpose of the key the header's MAC is made with (``KeyRing/derivedMAC(purpose:)``).
    package static let purpose = "bin-table"

    /// What the MAC covers: every member but the MAC, in a fixed order.
    var canonical: [UInt8] {
        var members: [(key: String, value: JSONValue)] = [
            ("version", .int(Int(version))), ("rows", .int(rows)), ("source", .string(source)),
            ("imported_at", .int(Int(importedAt))), ("sha256", .string(Self.hex(digest))),
        ]
        if let previousDigest {
            members.append(("previous", previousTable.map { .string($0) } ?? .null))
            members.append(("previous_sha256", .string(Self.hex(previousDigest))))
        }
        return JSONWriter.encode(.object(members))
    }

    /// The header as stored.
    var stored: [UInt8] {
        JSONWriter.encode(
            .object([
                ("version", .int(Int(version))), ("rows", .int(rows)), ("source", .string(source)),
                ("imported_at", .int(Int(importedAt))), ("sha256", .string(Self.hex(digest))),
                ("mac", .string(Self.hex(mac))), ("previous", previousTable.map { .string($0) } ?? .null),
                ("previous_sha256", previousDigest.map { .string(Self.hex($0)) } ?? .null),
            ]))
    }

    /// Reads a stored header; nil when it is not one.
    init?(stored bytes: [UInt8]) {
        guard case .object(let m)? = try? JSONParser().parse(bytes) else { return nil }
        func int(_ key: String) -> Int? {
            guard case .number(let n)? = m.first(where: { $0.key == key })?.value else { return nil }
            return Int(n)
        }
        func text(_ key: String) -> String? { m.first(where: { $0.key == key })?.value.stringValue }
        guard let version = int("version"), let rows = int("rows"), let source = text("source"),
            let importedAt = int("imported_at"), let digest = text("sha256").flatMap(Self.bytes),
            let mac = text("mac").flatMap(Self.bytes)
        else { return nil }
        self.init(
            version: Int64(version), rows: rows, source: source, importedAt: Int64(importedAt), digest: digest,
            mac: mac)
        previousTable = text("previous")
        previousDigest = text("previous_sha256").flatMap(Self.bytes)
    }

    package init(version: Int64, rows: Int, source: String, importedAt: Int64, digest: [UInt8], mac: [UInt8] = []) {
        self.version = version
        self.rows = rows
        self.source = source
        self.importedAt = importedAt
        self.digest = digest
        self.mac = mac
    }

    /// Whether the MAC is the ring's for this header.
    func verifies(_ key: HMACKey) -> Bool {
        mac.count == 32 && constantTimeEquals(mac, key.authenticate(canonical))
    }

    /// `{"version","sha256","rows","source","imported_at"}`: what `cloak bins status` prints.
    /// A table is named by its version and digest: after a restore, two tables may share a
    /// version.
    package var json: JSONValue {
        .object([
            ("version", .int(Int(version))), ("sha256", .string(Self.hex(digest))), ("rows", .int(rows)),
            ("source", .string(source)), ("imported_at", .string(RevealedRecord.iso8601(importedAt))),
        ])
    }

    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    static func bytes(_ hex: String) -> [UInt8]? {
        let digits = Array(hex.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        for i in stride(from: 0, to: digits.count, by: 2) {
            guard let byte = UInt8(String(decoding: digits[i..<i + 2], as: UTF8.self), radix: 16) else { return nil }
            out.append(byte)
        }
        return out
    }
}

/// Imports a BIN table into the store and reports the one there (`cloak bins`).
package struct BinTableAdministration {
    package let store: any AliasStore
    package let key: HMACKey

    package init(store: any AliasStore, ring: KeyRing) {
        self.init(store: store, key: ring.derivedMAC(purpose: BinTableDocument.purpose))
    }

    /// With the key already derived (a node's vault: ``Vault/derivedMAC(purpose:)``).
    package init(store: any AliasStore, key: HMACKey) {
        self.store = store
        self.key = key
    }

    package enum Failure: Error, CustomStringConvertible {
        case raced
        case store(String)
        package var description: String {
            switch self {
            case .raced: "another import changed the table meanwhile; nothing was changed: run it again"
            case .store(let why): "the store failed: \(why)"
            }
        }
    }

    /// The header in the store, and whether it verifies (nil: no table was ever imported).
    package func status() throws(Failure) -> (document: BinTableDocument, verified: Bool)? {
        do {
            guard let bytes = try store.metadata(BinTableDocument.pointerName), !bytes.isEmpty else { return nil }
            guard let document = BinTableDocument(stored: bytes) else {
                return (BinTableDocument(version: 0, rows: 0, source: "?", importedAt: 0, digest: []), false)
            }
            return (document, document.verifies(key))
        } catch {
            throw .store("\(error)")
        }
    }

    /// Writes `table` (read and checked by ``BinTableReader``) as the next version; the header.
    package func importTable(_ table: BinTableReader.Table, source: String, now: Int64) throws(Failure)
        -> BinTableDocument
    {
        let content = table.encoded()
        do {
            let old = try store.metadata(BinTableDocument.pointerName)
            let previous = old.flatMap { BinTableDocument(stored: $0) }
            // Above every table this store has held, not only the header's: after a restore
            // put an older header back, an import numbered from it would reuse a version nodes
            // already served with another table (issue 55, item 6).
            let highest = max(
                previous?.version ?? 0,
                BinTableDocument.highestVersion(try store.metadataNames(prefix: BinTableDocument.tablePrefix)))
            let (next, overflow) = highest.addingReportingOverflow(1)
            guard !overflow else { throw Failure.store("the stored header's version is not one an import makes") }
            var document = BinTableDocument(
                version: next, rows: table.rows.count, source: source, importedAt: now, digest: Digest.sha256(content))
            document.previousTable = previous?.tableName
            // The table before, named under this header's MAC when its own header verifies.
            if let previous, previous.verifies(key) { document.previousDigest = previous.digest }
            document.mac = key.authenticate(document.canonical)
            try store.setMetadata(document.tableName, content)
            guard try store.replaceMetadata(BinTableDocument.pointerName, expected: old, with: document.stored) else {
                // Another import won this version: only this import's own table goes.
                try store.setMetadata(document.tableName, [])
                throw Failure.raced
            }
            // The table before stays (nodes may be reading it); the one before that goes.
            if let before = previous?.previousTable, before.hasPrefix("bins.table.") {
                try store.setMetadata(before, [])
            }
            return document
        } catch let failure as Failure {
            throw failure
        } catch {
            throw .store("\(error)")
        }
    }
}
