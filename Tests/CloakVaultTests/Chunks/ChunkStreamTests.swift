import Testing

@testable import CloakVault

/// The one read of a chunk stream (``ChunkStream``): each kind in its own table, named by its
/// own columns, spelled as each store's SQL spells parameters.
struct ChunkStreamTests {
    static let job = JobID("job_1Ab2Cd3Ef4Gh5Jk6Lm7Np8Qr9S")!

    @Test func eachKindReadsItsOwnTable() {
        let sqlite: (Int, Bool) -> String = { n, _ in "?\(n)" }
        #expect(
            ChunkStream.readQuery(ChunkStream.file(uploadID: "up_1").kind, sqlite)
                == "SELECT sealed FROM file_chunks WHERE upload_id = ?1 AND idx >= ?2 ORDER BY idx LIMIT ?3")
        #expect(
            ChunkStream.readQuery(ChunkStream.job(Self.job, .advice).kind, sqlite)
                == "SELECT sealed FROM job_chunks WHERE job = ?1 AND part = ?2 AND idx >= ?3 ORDER BY idx LIMIT ?4")
        let postgres: (Int, Bool) -> String = { n, isInt in isInt ? "$\(n)::int8" : "$\(n)" }
        #expect(
            ChunkStream.readQuery(.job, postgres)
                == "SELECT sealed FROM job_chunks WHERE job = $1 AND part = $2::int8 AND idx >= $3::int8 ORDER BY idx LIMIT $4::int8"
        )
        #expect(ChunkStream.job(Self.job, .advice).keys == [.text(Self.job.text), .int(2)])
        #expect(ChunkStream.file(uploadID: "up_1").keys == [.text("up_1")])
    }
}
