import CloakTesting
import Foundation
import Synchronization
import Testing

@testable import CloakHTTP

/// Answers whose body is produced as it is sent (``BodyStream``): whole and in order,
/// pulled only as the client takes them, never passed off as whole when the producer fails or
/// breaks its length, and the connection reused after a whole one.
@Suite(.tags(.racy, .sockets)) struct StreamedAnswerTests {
    /// A producer of `pieces` pieces of `size` bytes (byte i of the whole is `i * 7 + 3`), then
    /// `ending` (or nothing more when `stopAfter` pieces were given); counts what it was asked.
    final class Producer: Sendable {
        let asked = Atomic<Int>(0)
        let pieces: Int
        let size: Int
        let ending: BodyStream.Piece
        init(pieces: Int, size: Int, ending: BodyStream.Piece = .end) {
            self.pieces = pieces
            self.size = size
            self.ending = ending
        }
        var whole: [UInt8] { (0..<(pieces * size)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) } }
        var source: BodyStream {
            BodyStream { receive in
                let n = self.asked.add(1, ordering: .relaxed).newValue - 1
                guard n < self.pieces else { return receive(self.ending) }
                let start = n * self.size
                // From another thread, as the vault answers.
                DispatchQueue.global().async {
                    receive(.bytes((start..<(start + self.size)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }))
                }
            }
        }
    }

    /// A server answering every request from a fresh copy of `producer` (its counts stay on
    /// `producer` for the first request only).
    static func start(_ producer: Producer, promised: Int? = nil) throws -> HTTPServer {
        let served = Atomic<Int>(0)
        let server = try HTTPServer(configuration: HTTPServerConfiguration(port: 0, threads: 1)) { _ in
            let first = served.add(1, ordering: .relaxed).newValue == 1
            let serving =
                first ? producer : Producer(pieces: producer.pieces, size: producer.size, ending: producer.ending)
            var response = HTTPResponse(status: 200, headers: [("Content-Type", "application/octet-stream")])
            response.content = .stream(serving.source, length: promised ?? producer.pieces * producer.size)
            return response
        }
        server.start()
        return server
    }

    @Test func aStreamedAnswerArrivesWholeAndTheConnectionIsReused() throws {
        let producer = Producer(pieces: 40, size: 16 << 10)
        let server = try Self.start(producer)
        defer { server.shutdown() }
        let client = try RawHTTPClient(port: server.port)
        let first = try client.request("GET", "/file")
        #expect(first.status == 200)
        #expect(first.header("Content-Length") == String(40 * (16 << 10)))
        #expect(first.body == producer.whole)
        let second = try client.request("GET", "/file")
        #expect(second.status == 200)
        #expect(second.body == producer.whole)
    }

    @Test func aSlowReaderHoldsTheProducerBack() throws {
        let producer = Producer(pieces: 4096, size: 16 << 10)  // 64 MiB
        let server = try Self.start(producer)
        defer { server.shutdown() }
        let client = try RawHTTPClient(port: server.port, receiveBuffer: 4096)
        try client.send("GET /file HTTP/1.1\r\nHost: x\r\n\r\n")
        // The client reads nothing: the producer is asked only while the socket takes bytes.
        #expect(Poll.until(seconds: 5) { producer.asked.load(ordering: .relaxed) > 2 })
        // Polled every 200 ms until the count stops moving (the socket buffers are full).
        var settled = -1
        #expect(
            Poll.until(seconds: 10, every: 200_000) {
                let now = producer.asked.load(ordering: .relaxed)
                defer { settled = now }
                return now == settled
            })
        #expect(producer.asked.load(ordering: .relaxed) < 400)
    }

    @Test(arguments: [
        ("the producer fails", BodyStream.Piece.failed(nil), nil as Int?),
        ("fewer bytes than promised", .end, 10 * 1024 + 1),
        ("more bytes than promised", .end, 10 * 1024 - 1),
    ])
    func aBrokenAnswerIsCutNeverPassedOffAsWhole(_ why: String, ending: BodyStream.Piece, promised: Int?) throws {
        let producer = Producer(pieces: 10, size: 1024, ending: ending)
        let server = try Self.start(producer, promised: promised ?? 10 * 1024 + 5)
        defer { server.shutdown() }
        let client = try RawHTTPClient(port: server.port, timeout: 5)
        try client.send("GET /file HTTP/1.1\r\nHost: x\r\n\r\n")
        // The client sees the connection close before the promised length: a truncated answer.
        #expect(throws: RawHTTPClient.ClientError.self, "\(why)") { _ = try client.readResponse() }
    }

    @Test func aHeadAnswerSaysTheLengthAndNeverPulls() throws {
        let producer = Producer(pieces: 3, size: 100)
        let server = try Self.start(producer)
        defer { server.shutdown() }
        let client = try RawHTTPClient(port: server.port)
        let head = try client.request("HEAD", "/file")
        #expect(head.header("Content-Length") == "300")
        #expect(head.body.isEmpty)
        #expect(producer.asked.load(ordering: .relaxed) == 0)
        #expect(try client.request("GET", "/file").body == producer.whole)
    }
}
