import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// An upstream that answers every request head with the same fixed bytes, then closes the
/// connection when told to: the answers a broken or hostile upstream sends, byte for byte. It
/// counts the connections it accepted (a proxy that reused one after a bad answer shows here).
package final class CannedUpstream: @unchecked Sendable {
    package let port: Int
    private let fd: Int32
    private let accepted = Mutex(0)

    /// `reset`: the connection ends with a reset (SO_LINGER 0) rather than a FIN.
    package init(answer: [UInt8], closeAfter: Bool = true, reset: Bool = false) {
        let (fd, port) = LoopbackSocket.listening()
        self.fd = fd
        self.port = port
        LoopbackSocket.serveEach(fd) { [self] c in
            accepted.withLock { $0 += 1 }
            var pending: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = chunk.withUnsafeMutableBytes { recv(c, $0.baseAddress, $0.count, 0) }
                if n <= 0 { break }
                pending += chunk[0..<n]
                guard let length = RawUpstream.framedLength(pending) else { continue }
                pending.removeFirst(length)
                _ = answer.withUnsafeBytes { send(c, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if closeAfter { break }
            }
            if reset {
                var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
                setsockopt(c, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
            }
            close(c)
        }
    }

    /// The connections accepted so far.
    package var connections: Int { accepted.withLock { $0 } }

    package func stop() {
        shutdown(fd, Int32(SHUT_RDWR))
        close(fd)
    }
}
