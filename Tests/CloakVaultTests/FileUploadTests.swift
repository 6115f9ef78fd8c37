import CloakCore
import CloakTesting
import Testing

@testable import CloakCrypto
@testable import CloakVault

/// A file sealed, inspected and fingerprinted as it arrives, stored chunk by chunk, and read back
/// whole through the store (issue 47).
@Suite struct FileUploadTests {
    static let ring = KeyRing.generate()

    static func jpeg(_ count: Int) -> [UInt8] {
        [0xFF, 0xD8, 0xFF, 0xE0] + (0..<max(0, count - 4)).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 5) }
    }

    @Test(arguments: [1, 7, 4096, 65_536, 100_000] as [Int])
    func anUploadStoresChunksThatOpenToTheSameFile(piece: Int) throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = try SQLiteAliasStore(path: directory.path + "/files.db")
        let content = Self.jpeg(3 * FileSeal.chunkSize + 1234)
        let upload = try FileUpload(ring: Self.ring, now: 1_700_000_000)
        try store.startFile(upload.started)
        var offset = 0
        while offset < content.count {
            for chunk in try upload.feed(content[offset..<min(offset + piece, content.count)]) {
                try store.appendFileChunk(uploadID: upload.uploadID, index: chunk.index, sealed: chunk.sealed)
            }
            offset += piece
        }
        let end = try upload.finish()
        try store.appendFileChunk(uploadID: upload.uploadID, index: end.last.index, sealed: end.last.sealed)
        #expect(end.chunkCount == 4)
        #expect(end.inspection.mediaType == .jpeg && end.inspection.bytes == content.count)
        #expect(end.inspection.verdict(FileRules()) == [])
        #expect(end.fingerprint == Self.ring.fingerprintMAC.authenticate(Array("cloak/v1/file\0".utf8) + content))
        // Stored and read back in pages, then opened.
        var opener = try FileOpener(
            fileID: Array(upload.uploadID.utf8),
            wrappedKey: FileSeal.WrappedKey(keyID: upload.started.keyID, sealed: upload.started.wrappedKey),
            ring: Self.ring)
        var read: [UInt8] = []
        var index = 0
        while true {
            let page = try store.fileChunks(uploadID: upload.uploadID, from: index, limit: 2)
            if page.isEmpty { break }
            for sealed in page { read += try opener.open(sealed).bytes }
            index += page.count
        }
        try opener.finish()
        #expect(read == content)
    }

    @Test func theSameContentHasTheSameFingerprintAndAnotherDoesNot() throws {
        func fingerprint(_ content: [UInt8]) throws -> [UInt8] {
            let upload = try FileUpload(ring: Self.ring, now: 1_700_000_000)
            _ = try upload.feed(content)
            return try upload.finish().fingerprint
        }
        let a = Self.jpeg(1000)
        #expect(try fingerprint(a) == fingerprint(a))
        #expect(try fingerprint(a) != fingerprint(a + [0]))
        // Keyed: another ring's fingerprint of the same content differs, and none is a plain SHA-256.
        let other = try FileUpload(ring: KeyRing.generate(), now: 1_700_000_000)
        _ = try other.feed(a)
        #expect(try other.finish().fingerprint != fingerprint(a))
        #expect(try fingerprint(a) != Digest.sha256(a))
    }

    @Test func anEmptyFileIsOneEmptyChunkAndRefusedByTheRules() throws {
        let upload = try FileUpload(ring: Self.ring, now: 1_700_000_000)
        let end = try upload.finish()
        #expect(end.chunkCount == 1 && end.last.index == 0)
        #expect(end.inspection.verdict(FileRules()) == [FileValidationError.empty])
    }
}
