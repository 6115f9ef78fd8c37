import CloakCore
import CloakCrypto
import CloakHTTP
import CloakVault
import Foundation
import Synchronization

/// A done job's output as an answer's body: chunks read a few at a time and opened in their
/// places; the end only once the last chunk has opened (a stream cut short in the store fails,
/// and the chunked answer ends without its last chunk).
final class JobOutputSource: Sendable {
    private struct State {
        var next = 0
        var ready: [[UInt8]] = []
        var ended = false
    }

    private let vault: VaultClient
    private let job: JobID
    private let part: JobPart
    private let seal: JobSeal
    private let state = Mutex(State())

    init(vault: VaultClient, job: JobID, part: JobPart, seal: JobSeal) {
        self.vault = vault
        self.job = job
        self.part = part
        self.seal = seal
    }

    func next(_ receive: @escaping @Sendable (BodyStream.Piece) -> Void) {
        enum Step { case give([UInt8], Int), end, read(Int) }
        let step: Step = state.withLock { s in
            if s.ended { return .end }
            if !s.ready.isEmpty {
                s.next += 1
                return .give(s.ready.removeFirst(), s.next - 1)
            }
            return .read(s.next)
        }
        switch step {
        case let .give(sealed, index): give(sealed, index, receive)
        case .end: receive(.end)
        case let .read(from):
            let (job, part) = (self.job, self.part)
            vault.vault.withStore(reads: true) { store in
                try store.jobChunks(job, part: part, from: from, limit: 4)
            } completion: { result in
                let deliver: @Sendable () -> Void = {
                    guard case let .success(chunks) = result, !chunks.isEmpty else { return receive(.failed(nil)) }
                    self.state.withLock { $0.ready += chunks }
                    self.next(receive)
                }
                if let loop = self.vault.loop { loop.execute(deliver) } else { deliver() }
            }
        }
    }

    private func give(_ sealed: [UInt8], _ index: Int, _ receive: @escaping @Sendable (BodyStream.Piece) -> Void) {
        guard let opened = try? seal.open(sealed, part: part.rawValue, index: index) else {
            return receive(.failed(nil))
        }
        if opened.isLast { state.withLock { $0.ended = true } }
        if opened.bytes.isEmpty { return opened.isLast ? receive(.end) : next(receive) }
        receive(.bytes(opened.bytes))
    }
}
