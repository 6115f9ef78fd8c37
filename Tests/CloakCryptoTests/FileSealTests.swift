import CloakTesting
import Testing

@testable import CloakCrypto

/// Files sealed in chunks (issue 47): what comes back is what went in, in order, and a chunk
/// moved, repeated, altered, cut or dropped, or a file missing its end, never reads as whole.
@Suite struct FileSealTests {
    static let ring = KeyRing.generate()
    static let fileID = Array("file-7f1c".utf8)

    /// `content` sealed in chunks of the chunk size.
    static func seal(_ content: [UInt8], fileID: [UInt8] = fileID) throws -> (FileSeal.WrappedKey, [[UInt8]]) {
        var sealer = try FileSealer(fileID: fileID, ring: ring)
        var chunks: [[UInt8]] = []
        var offset = 0
        repeat {
            let end = min(offset + FileSeal.chunkSize, content.count)
            chunks.append(try sealer.seal(Array(content[offset..<end]), isLast: end == content.count))
            offset = end
        } while offset < content.count
        return (sealer.wrappedKey, chunks)
    }

    /// The content opened from `chunks`, or the error.
    static func open(
        _ chunks: [[UInt8]], key: FileSeal.WrappedKey, fileID: [UInt8] = fileID, ring: KeyRing = ring
    ) -> Result<[UInt8], CryptoError> {
        do throws(CryptoError) {
            var opener = try FileOpener(fileID: fileID, wrappedKey: key, ring: ring)
            var out: [UInt8] = []
            for chunk in chunks { out += try opener.open(chunk).bytes }
            try opener.finish()
            return .success(out)
        } catch {
            return .failure(error)
        }
    }

    static func content(_ count: Int) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ 17) } }

    @Test(arguments: [
        0, 1, FileSeal.chunkSize - 1, FileSeal.chunkSize, FileSeal.chunkSize + 1, 3 * FileSeal.chunkSize + 5,
    ])
    func whatIsSealedOpensTheSame(count: Int) throws {
        let content = Self.content(count)
        let (key, chunks) = try Self.seal(content)
        #expect(chunks.count == max(1, (count + FileSeal.chunkSize - 1) / FileSeal.chunkSize))
        #expect(chunks.allSatisfy { $0.count <= FileSeal.chunkSize + FileSeal.overhead })
        #expect(try Self.open(chunks, key: key).get() == content)
    }

    @Test func chunksOutOfPlaceCutOrExtraNeverOpen() throws {
        let (key, chunks) = try Self.seal(Self.content(3 * FileSeal.chunkSize + 9))
        let tampered: [(String, [[UInt8]])] = [
            ("two chunks swapped", [chunks[1], chunks[0], chunks[2], chunks[3]]),
            ("a chunk repeated", [chunks[0], chunks[0], chunks[1], chunks[2], chunks[3]]),
            ("a middle chunk dropped", [chunks[0], chunks[2], chunks[3]]),
            ("the last chunk dropped", Array(chunks.prefix(3))),
            ("nothing", []),
            ("the last chunk twice", chunks + [chunks[3]]),
            ("a chunk cut short", [chunks[0], chunks[1], Array(chunks[2].dropLast(1)), chunks[3]]),
            (
                "a byte flipped",
                [
                    chunks[0], chunks[1].enumerated().map { $0.offset == 40 ? $0.element ^ 1 : $0.element }, chunks[2],
                    chunks[3],
                ]
            ),
            ("a chunk under the overhead", [chunks[0], [1, 2, 3], chunks[2], chunks[3]]),
        ]
        for (name, chunks) in tampered {
            #expect(throws: CryptoError.self, "\(name)") { try Self.open(chunks, key: key).get() }
        }
    }

    @Test func aChunkOrKeyOfAnotherFileDoesNotOpen() throws {
        let content = Self.content(2 * FileSeal.chunkSize)
        let (keyA, chunksA) = try Self.seal(content, fileID: Array("file-a".utf8))
        let (keyB, chunksB) = try Self.seal(content, fileID: Array("file-b".utf8))
        // Same content, same positions: another file's chunk is still refused.
        #expect(throws: CryptoError.self) {
            try Self.open([chunksA[0], chunksB[1]], key: keyA, fileID: Array("file-a".utf8)).get()
        }
        // A wrapped key moved to another file's row does not open there.
        #expect(throws: CryptoError.self) { try Self.open(chunksA, key: keyB, fileID: Array("file-a".utf8)).get() }
        // Another ring has not the data key.
        #expect(throws: CryptoError.self) {
            try Self.open(chunksA, key: keyA, fileID: Array("file-a".utf8), ring: KeyRing.generate()).get()
        }
        #expect(try Self.open(chunksA, key: keyA, fileID: Array("file-a".utf8)).get() == content)
    }

    @Test func aSealerRefusesChunksPastTheLastOrTooLarge() throws {
        var sealer = try FileSealer(fileID: Self.fileID, ring: Self.ring)
        #expect(throws: CryptoError.self) {
            try sealer.seal([UInt8](repeating: 0, count: FileSeal.chunkSize + 1), isLast: false)
        }
        _ = try sealer.seal([1], isLast: true)
        #expect(throws: CryptoError.self) { try sealer.seal([2], isLast: true) }
        #expect(sealer.count == 1)
    }

    @Test func aRotatedRingStillOpensOlderFiles() throws {
        let content = Self.content(1000)
        let (key, chunks) = try Self.seal(content)
        let rotated = Self.ring.rotated()
        #expect(rotated.currentID != key.keyID)
        #expect(try Self.open(chunks, key: key, ring: rotated).get() == content)
    }
}

/// The chunk format opened by pyca/cryptography (`scripts/test-python`): the wrapped key under
/// the data key, then each chunk under the file key, with the associated data documented in
/// `FileSeal`. Another implementation reading the same bytes is what keeps the format honest.
@Suite(.enabled(if: TestPython.isAvailable, "needs CLOAK_TEST_PYTHON (scripts/test sets it)"), .tags(.python))
struct FileSealInteropTests {
    static let script = #"""
        import json, sys
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
        def load(path): return open(path, "rb").read()
        data_key, file_id, wrapped = load(sys.argv[1]), load(sys.argv[2]), load(sys.argv[3])
        def open_box(key, box, aad): return AESGCM(key).decrypt(box[:12], box[12:], aad)
        file_key = open_box(data_key, wrapped, b"cloak/v1/file-key" + file_id)
        chunks = sys.argv[4:]
        out = b""
        for index, path in enumerate(chunks):
            last = 1 if index == len(chunks) - 1 else 0
            aad = b"cloak/v1/file-chunk" + file_id + index.to_bytes(4, "big") + bytes([last])
            out += open_box(file_key, load(path), aad)
        print(json.dumps({"hex": out.hex()}))
        """#

    @Test func pycaOpensWhatCloakSealed() throws {
        let ring = FileSealTests.ring
        let content = FileSealTests.content(2 * FileSeal.chunkSize + 777)
        var sealer = try FileSealer(fileID: FileSealTests.fileID, ring: ring)
        var chunks: [[UInt8]] = []
        var offset = 0
        while offset < content.count {
            let end = min(offset + FileSeal.chunkSize, content.count)
            chunks.append(try sealer.seal(Array(content[offset..<end]), isLast: end == content.count))
            offset = end
        }
        let inputs = [ring.current.encryptionKey.rawBytes, FileSealTests.fileID, sealer.wrappedKey.sealed] + chunks
        let answer = try #require(try TestPython.run(Self.script, inputs: inputs) as? [String: Any])
        let hex = try #require(answer["hex"] as? String)
        let opened = stride(from: 0, to: hex.count, by: 2).map { i -> UInt8 in
            let start = hex.index(hex.startIndex, offsetBy: i)
            return UInt8(hex[start..<hex.index(start, offsetBy: 2)], radix: 16)!
        }
        #expect(opened == content)
    }
}
