import CLibevent
import Testing

@testable import CloakHTTP

/// The head clock reads what is buffered through `evbuffer_peek`, eight chunks at a time: a
/// pipelined head spread over many chunks is scanned whole, wherever its end falls.
@Suite struct ServerConnectionScanTests {
    /// A connection whose input buffer holds `pieces`, each in a chunk of its own, scanned as after
    /// an answer (from the first byte).
    func phaseAfterScanning(_ pieces: [String]) throws -> RequestClock.Phase {
        let base = try #require(event_base_new())
        defer { event_base_free(base) }
        let bev = try #require(bufferevent_socket_new(base, -1, 0))
        defer { bufferevent_free(bev) }
        let input = try #require(bufferevent_get_input(bev))
        // Chunks are added by reference so evbuffer cannot merge them; the memory outlives the buffer.
        let storage = pieces.map { piece -> UnsafeMutableBufferPointer<UInt8> in
            let bytes = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: piece.utf8.count)
            _ = bytes.initialize(from: piece.utf8)
            return bytes
        }
        defer { storage.forEach { $0.deallocate() } }
        // A socket bufferevent keeps its input's end frozen between its own reads.
        evbuffer_unfreeze(input, 0)
        for bytes in storage { evbuffer_add_reference(input, bytes.baseAddress, bytes.count, nil, nil) }
        let connection = ServerConnection(
            bufferevent: Bufferevent(raw: bev), admission: .serve, now: 0, thread: LoopThread())
        connection.clock.dispatched(now: 0)
        connection.answered(now: 1)
        #expect(evbuffer_get_length(input) == storage.reduce(0) { $0 + $1.count })
        evbuffer_drain(input, evbuffer_get_length(input))
        return connection.clock.phase
    }

    @Test(arguments: [1, 7, 8, 9, 16, 17, 30])
    func aHeadEndingInAnyChunkIsSeen(chunks: Int) throws {
        // The head cut into `chunks` pieces, the last holding only its final "\n".
        let head = Array("GET / HTTP/1.1\r\nHost: x\r\nX-Long: \(String(repeating: "a", count: 60))\r\n\r\n".utf8)
        let front = head.dropLast()
        var pieces: [String] = []
        if chunks == 1 {
            pieces = [String(decoding: head, as: UTF8.self)]
        } else {
            // chunks - 1 pieces of the rest: the first ones one byte longer when it does not divide.
            var start = front.startIndex
            for i in 0..<(chunks - 1) {
                let size = front.count / (chunks - 1) + (i < front.count % (chunks - 1) ? 1 : 0)
                pieces.append(String(decoding: front[start..<(start + size)], as: UTF8.self))
                start += size
            }
            pieces.append("\n")
        }
        #expect(pieces.count == chunks)
        #expect(try phaseAfterScanning(pieces) == .readingBody, "\(pieces.count) chunks")
    }

    @Test func anUnfinishedHeadInManyChunksIsStillAwaited() throws {
        let pieces = (0..<20).map { "X-\($0): y\r\n" }
        #expect(try phaseAfterScanning(pieces) == .awaitingHead)
    }
}
