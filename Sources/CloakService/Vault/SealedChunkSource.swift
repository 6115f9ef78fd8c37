import CloakCrypto
import CloakHTTP
import CloakVault
import Synchronization

/// A stream of sealed chunks as an answer's body (issue 76: one for files and jobs): a stored
/// file's content (`GET /files/{alias}`, a route's revealed files) or a done job's output (its
/// mapping, advice or export), read from the store a few chunks at a time and each opened in
/// its place (``ChunkSeal``). The end comes only once the chunk sealed as the last has opened:
/// a stream cut short in the store fails, and the answer ends without its promised length.
final class SealedChunkSource: Sendable {
    /// Reads up to `limit` sealed chunks from place `from`, answering on the request's loop.
    typealias Read =
        @Sendable (
            _ from: Int, _ limit: Int, _ completion: @escaping @Sendable (Result<[[UInt8]], any Error>) -> Void
        ) -> Void

    /// Chunks read from the store at once (256 KiB of a file's sealed bytes).
    static let batch = 4

    private struct State {
        var next = 0
        var ready: [[UInt8]] = []
        var ended = false
    }

    private let seal: ChunkSeal
    /// How many chunks the stream has, where the store knows (a file's); a read past them fails.
    private let count: Int?
    private let read: Read
    private let state = Mutex(State())

    init(_ seal: ChunkSeal, count: Int?, read: @escaping Read) {
        self.seal = seal
        self.count = count
        self.read = read
    }

    /// A stored file's content.
    static func file(_ file: StoredFile, vault: VaultClient) throws(VaultError) -> SealedChunkSource {
        SealedChunkSource(try vault.vault.opener(for: file).chunks, count: file.chunkCount) { from, limit, completion in
            vault.fileChunks(file, from: from, limit: limit) { completion($0.mapError { $0 }) }
        }
    }

    /// A job's stream `part`.
    static func job(_ job: JobID, part: JobPart, seal: JobSeal, vault: VaultClient) -> SealedChunkSource {
        SealedChunkSource(seal.chunks(part.rawValue), count: nil) { from, limit, completion in
            vault.vault.withStore(reads: true) { store in
                try store.jobChunks(job, part: part, from: from, limit: limit)
            } completion: { result in
                if let loop = vault.loop { loop.execute { completion(result) } } else { completion(result) }
            }
        }
    }

    func next(_ receive: @escaping @Sendable (BodyStream.Piece) -> Void) {
        enum Step { case give([UInt8], place: Int), end, fail, read(Int) }
        let step: Step = state.withLock { s in
            if s.ended { return .end }
            if !s.ready.isEmpty {
                s.next += 1
                return .give(s.ready.removeFirst(), place: s.next - 1)
            }
            if let count, s.next >= count { return .fail }
            return .read(s.next)
        }
        switch step {
        case let .give(sealed, place): give(sealed, place, receive)
        case .end: receive(.end)
        case .fail: receive(.failed(nil))
        case let .read(from):
            read(from, Self.batch) { result in
                guard case let .success(chunks) = result, !chunks.isEmpty else { return receive(.failed(nil)) }
                self.state.withLock { $0.ready += chunks }
                self.next(receive)
            }
        }
    }

    private func give(_ sealed: [UInt8], _ place: Int, _ receive: @escaping @Sendable (BodyStream.Piece) -> Void) {
        guard let opened = try? seal.open(sealed, place: place) else { return receive(.failed(nil)) }
        if opened.isLast { state.withLock { $0.ended = true } }
        // An empty chunk: the end itself when it is the last, else nothing to send.
        if opened.bytes.isEmpty { return opened.isLast ? receive(.end) : next(receive) }
        receive(.bytes(opened.bytes))
    }
}
