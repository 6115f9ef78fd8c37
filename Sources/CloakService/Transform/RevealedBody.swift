import CloakCore
import CloakHTTP
import CloakVault
import Foundation
import Synchronization

/// A request body with files revealed into it, produced as it is sent: its bytes in pieces of
/// 64 KiB, each file opened chunk by chunk (``SealedChunkSource``) and, where the route asks,
/// encoded in base64 as it goes (a carry of up to two bytes between chunks).
final class RevealedBody: Sendable {
    enum Segment: Sendable {
        case bytes([UInt8])
        case file(StoredFile, base64: Bool)
    }

    private struct State {
        var index = 0
        var offset = 0
        var current: SealedChunkSource?
        var carry: [UInt8] = []
    }

    private enum Step {
        case give([UInt8]), again, end, fail
        case pull(SealedChunkSource, base64: Bool)
    }

    private let vault: VaultClient
    private let segments: [Segment]
    private let state = Mutex(State())

    init(vault: VaultClient, segments: [Segment]) {
        self.vault = vault
        self.segments = segments
    }

    func next(_ receive: @escaping @Sendable (BodyStream.Piece) -> Void) {
        let step: Step = state.withLock { s in
            guard s.index < segments.count else { return .end }
            switch segments[s.index] {
            case .bytes(let bytes):
                guard s.offset < bytes.count else {
                    s.index += 1
                    s.offset = 0
                    return .again
                }
                let end = min(bytes.count, s.offset + (64 << 10))
                defer { s.offset = end }
                return .give(Array(bytes[s.offset..<end]))
            case .file(let file, let base64):
                if s.current == nil {
                    guard let source = try? SealedChunkSource.file(file, vault: vault) else { return .fail }
                    s.current = source
                }
                return .pull(s.current!, base64: base64)
            }
        }
        switch step {
        case .give(let bytes): receive(.bytes(bytes))
        case .again: next(receive)
        case .end: receive(.end)
        case .fail: receive(.failed(nil))
        case .pull(let source, let base64):
            source.next { piece in
                switch piece {
                case .bytes(let plain):
                    guard base64 else { return receive(.bytes(plain)) }
                    let encoded: [UInt8] = self.state.withLock { s in
                        let joined = s.carry + plain
                        let whole = joined.count / 3 * 3
                        s.carry = Array(joined[whole...])
                        return Array(Data(joined[..<whole]).base64EncodedString().utf8)
                    }
                    if encoded.isEmpty { self.next(receive) } else { receive(.bytes(encoded)) }
                case .end:
                    let rest: [UInt8] = self.state.withLock { s in
                        s.index += 1
                        s.current = nil
                        defer { s.carry = [] }
                        return base64 && !s.carry.isEmpty ? Array(Data(s.carry).base64EncodedString().utf8) : []
                    }
                    if rest.isEmpty { self.next(receive) } else { receive(.bytes(rest)) }
                case .failed:
                    receive(.failed(nil))
                }
            }
        }
    }
}
