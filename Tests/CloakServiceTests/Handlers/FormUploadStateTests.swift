import CloakVault
import Testing

@testable import CloakService

/// The flow of a form upload between the body and the vault, without either (issue 58): the
/// body is read while less than the limit waits for the vault, one write at a time, and a
/// failed submission deletes what it started once no write of its own is in flight.
struct FormUploadStateTests {
    typealias Write = FormUploadState.Write

    static func chunks(_ id: String, bytes: Int) -> Write {
        Write(start: nil, uploadID: id, chunks: [(0, [UInt8](repeating: 0, count: bytes))], bytes: bytes)
    }

    /// What the steps say, as text: `w:ID` a write, `pull`, `complete`.
    static func said(_ steps: FormUploadState.Steps) -> [String] {
        (steps.write.map { ["w:\($0.uploadID)"] } ?? []) + (steps.pull ? ["pull"] : [])
            + (steps.complete ? ["complete"] : [])
    }

    @Test func theBodyIsReadOnlyWhileLessThanTheLimitWaits() {
        var state = FormUploadState(limit: 100)
        #expect(Self.said(state.start()) == ["pull"])
        state.enqueue(Self.chunks("a", bytes: 60))
        #expect(Self.said(state.pieceRead()) == ["w:a", "pull"])  // one write goes; 60 < 100
        state.enqueue(Self.chunks("a", bytes: 50))
        #expect(Self.said(state.pieceRead()) == [])  // 110 wait: held back, the write in flight
        #expect(state.isHeldBack)
        #expect(Self.said(state.written()) == ["w:a", "pull"])  // the second goes; 50 wait
        #expect(Self.said(state.bodyEnd()) == [])  // a write is in flight
        #expect(Self.said(state.written()) == ["complete"])
    }

    @Test func chunksJoinTheirUploadsWaitingWrite() {
        var state = FormUploadState(limit: 1_000)
        state.enqueue(Self.chunks("a", bytes: 10))
        _ = state.pieceRead()  // "a" is with the vault
        state.enqueue(Self.chunks("a", bytes: 10))
        state.enqueue(Self.chunks("a", bytes: 10))  // joins the waiting one, not the one in flight
        #expect(state.queue.count == 2)
        #expect(state.queue[1].chunks.count == 2)
        #expect(state.queuedBytes == 30)
    }

    @Test func aFailureDeletesWhatItStartedAfterTheWriteInFlight() {
        var state = FormUploadState(limit: 1_000)
        state.enqueue(Write(start: nil, uploadID: "x", chunks: [], bytes: 0))
        var started = Self.chunks("a", bytes: 5)
        started.start = Self.startedFile("a")
        state.enqueue(started)
        #expect(state.startedUploads == ["a"])
        _ = state.pieceRead()  // a write in flight
        #expect(state.finish(failed: true) == [])  // not while it is in flight
        #expect(state.writeEndedAfterFinish() == ["a"])
        #expect(Self.said(state.pieceRead()) == [])  // nothing after the answer
        #expect(Self.said(state.bodyEnd()) == [])
    }

    @Test func aSuccessKeepsItsUploads() {
        var state = FormUploadState(limit: 1_000)
        var started = Self.chunks("a", bytes: 5)
        started.start = Self.startedFile("a")
        state.enqueue(started)
        _ = state.bodyEnd()
        _ = state.written()
        #expect(state.finish(failed: false) == [])
        #expect(state.startedUploads.isEmpty)
    }

    static func startedFile(_ id: String) -> StoredFile {
        StoredFile(uploadID: id, keyID: "k", wrappedKey: [], createdAt: 0)
    }
}
