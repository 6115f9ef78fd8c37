import Foundation
import Synchronization

/// An upstream made of a bare socket: it records every byte a connection sends, and answers
/// each request it can frame (head + `Content-Length`) with `204`. What a proxy really puts on
/// the wire, with no HTTP parser in between to tidy it up.
package final class RawUpstream: @unchecked Sendable {
    package let port: Int
    private let fd: Int32
    private let received = Mutex<[UInt8]>([])

    /// `receiveBuffer`: a small SO_RCVBUF on every connection (a slow reader: a large request
    /// cannot be taken by the kernel at once, so the proxy's write waits for room).
    package init(receiveBuffer: Int32? = nil) {
        let (fd, port) = LoopbackSocket.listening()
        if var size = receiveBuffer {  // accepted connections take the listener's buffer size
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        self.fd = fd
        self.port = port
        LoopbackSocket.serveEach(fd) { [self] c in
            var pending: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = chunk.withUnsafeMutableBytes { recv(c, $0.baseAddress, $0.count, 0) }
                if n <= 0 { break }
                received.withLock { $0 += chunk[0..<n] }
                pending += chunk[0..<n]
                while let length = RawUpstream.framedLength(pending) {
                    pending.removeFirst(length)
                    let answer = Array("HTTP/1.1 204 No Content\r\n\r\n".utf8)
                    _ = answer.withUnsafeBytes { send(c, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                }
            }
            close(c)
        }
    }

    /// Everything received so far.
    package var bytes: [UInt8] { received.withLock { $0 } }

    /// Everything received so far, as text.
    package var text: String { String(decoding: received.withLock { $0 }, as: UTF8.self) }

    package func stop() {
        shutdown(fd, Int32(SHUT_RDWR))
        close(fd)
    }

    /// The length of the first complete request in `bytes` (head plus Content-Length), if any.
    static func framedLength(_ bytes: [UInt8]) -> Int? {
        guard let end = bytes.firstRange(of: Array("\r\n\r\n".utf8)) else { return nil }
        let head = String(decoding: bytes[..<end.lowerBound], as: UTF8.self).lowercased()
        let length =
            head.components(separatedBy: "\r\n").first { $0.hasPrefix("content-length:") }
            .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
        let total = end.upperBound + length
        return bytes.count >= total ? total : nil
    }
}
