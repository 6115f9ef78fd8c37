import CloakTesting
import Testing

@testable import CloakCrypto

/// ``ChunkSeal``, the one chunk format of files and jobs (issue 76): a chunk opens only in its
/// own place, stream, owner and kind; and the bytes are those stores already hold, sealed and
/// opened by a second implementation (pyca/cryptography) from the documented associated data.
@Suite struct ChunkSealTests {
    static let key = SymmetricKey((0..<32).map { UInt8($0 &* 7 &+ 3) })
    static let file = ChunkSeal(key: key, binding: .file(id: Array("file-7f1c".utf8)))
    static let job = ChunkSeal(key: key, binding: .job(id: Array("job_01J".utf8), stream: 2))

    @Test func aChunkOpensOnlyInItsPlaceStreamOwnerAndKind() throws {
        let plain = Array("a line\n".utf8)
        let sealed = try Self.job.seal(plain, place: 5, isLast: false)
        #expect(try Self.job.open(sealed, place: 5).bytes == plain)
        #expect(try Self.job.open(sealed, place: 5).isLast == false)
        let elsewhere: [ChunkSeal] = [
            ChunkSeal(key: Self.key, binding: .job(id: Array("job_01J".utf8), stream: 3)),
            ChunkSeal(key: Self.key, binding: .job(id: Array("job_01K".utf8), stream: 2)),
            // The same bytes as a file's id: the kind is bound.
            ChunkSeal(key: Self.key, binding: .file(id: Array("job_01J".utf8))),
        ]
        for other in elsewhere {
            #expect(throws: CryptoError.self) { try other.open(sealed, place: 5) }
        }
        #expect(throws: CryptoError.self) { try Self.job.open(sealed, place: 4) }
        var altered = sealed
        altered[20] ^= 1
        #expect(throws: CryptoError.self) { try Self.job.open(altered, place: 5) }
        #expect(throws: CryptoError.self) { try Self.job.open(Array(sealed.prefix(27)), place: 5) }
    }

    @Test func aFileChunkCannotBePlacedPastFourBytes() throws {
        #expect(throws: CryptoError.self) { try Self.file.seal([1], place: Int(UInt32.max) + 1, isLast: true) }
        #expect(throws: CryptoError.self) { try Self.job.seal([1], place: -1, isLast: true) }
    }

    /// Seals with a fixed nonce each chunk of `plain` in the documented format (both kinds), and
    /// opens what Cloak sealed: `{"sealed": [hex…], "opened": [hex…]}`.
    static let script = #"""
        import json, sys
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
        def load(path): return open(path, "rb").read()
        key, plain, cloak_file, cloak_job = (load(p) for p in sys.argv[1:5])
        def file_aad(place, last):
            return b"cloak/v1/file-chunk" + b"file-7f1c" + place.to_bytes(4, "big") + bytes([last])
        def job_aad(place, last):
            return b"cloak/v1/job-chunk\0" + b"job_01J" + b"\0" + bytes([2]) + place.to_bytes(8, "big") + bytes([last])
        sealed = []
        for aad in (file_aad(7, 1), job_aad(7, 1)):
            nonce = bytes(range(12))
            sealed.append((nonce + AESGCM(key).encrypt(nonce, plain, aad)).hex())
        opened = []
        for box, aad in ((cloak_file, file_aad(3, 0)), (cloak_job, job_aad(3, 0))):
            opened.append(AESGCM(key).decrypt(box[:12], box[12:], aad).hex())
        print(json.dumps({"sealed": sealed, "opened": opened}))
        """#

    @Test(.enabled(if: TestPython.isAvailable, "needs CLOAK_TEST_PYTHON (scripts/test sets it)"), .tags(.python))
    func pycaReadsAndWritesTheSameBytes() throws {
        let plain = Array(#"{"row":1,"id":"c-1","result":"ok"}"#.utf8) + [0x0A]
        let inputs = [
            Self.key.rawBytes, plain, try Self.file.seal(plain, place: 3, isLast: false),
            try Self.job.seal(plain, place: 3, isLast: false),
        ]
        let answer = try #require(try TestPython.run(Self.script, inputs: inputs) as? [String: [String]])
        #expect(answer["opened"] == [Self.hexString(plain), Self.hexString(plain)])
        let sealed = try #require(answer["sealed"]).map { hex($0) }
        #expect(sealed.count == 2)
        // What another implementation sealed, as a store written before this code holds it.
        let file = try Self.file.open(sealed[0], place: 7)
        let job = try Self.job.open(sealed[1], place: 7)
        #expect(file.bytes == plain && file.isLast)
        #expect(job.bytes == plain && job.isLast)
    }

    static func hexString(_ bytes: [UInt8]) -> String {
        bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
    }
}
