import CLibevent
import COpenSSL
import Foundation

/// A blocking `GET` of one path on a local listener, for `cloak healthcheck` (a container's
/// health check; no shell, no curl in the image). TLS without verification: it asks its own
/// process on loopback, not a peer it must trust.
public enum HealthProbe {
    /// The status code answered, or nil when nothing usable came back within `timeout` seconds.
    public static func status(host: String, port: Int, path: String, tls: Bool, timeout: Int = 3) -> Int? {
        guard var address = Sockets.socketAddress(host: host, port: port) else { return nil }
        let family = Int32(address.storage.ss_family)
        let fd = socket(family, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var tv = timeval(tv_sec: timeout, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        let connected = withUnsafeMutablePointer(to: &address.storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(address.length)) == 0 }
        }
        guard connected else { return nil }
        let request = Array("GET \(path) HTTP/1.1\r\nHost: \(host)\r\nConnection: close\r\n\r\n".utf8)
        var answer: [UInt8] = []
        if tls {
            guard let ctx = SSL_CTX_new(TLS_client_method()) else { return nil }
            defer { SSL_CTX_free(ctx) }
            guard let ssl = SSL_new(ctx) else { return nil }
            defer { SSL_free(ssl) }
            SSL_set_fd(ssl, fd)
            guard SSL_connect(ssl) == 1, SSL_write(ssl, request, Int32(request.count)) == request.count else {
                return nil
            }
            var buffer = [UInt8](repeating: 0, count: 512)
            let n = SSL_read(ssl, &buffer, Int32(buffer.count))
            if n > 0 { answer = Array(buffer.prefix(Int(n))) }
        } else {
            guard send(fd, request, request.count, Int32(MSG_NOSIGNAL)) == request.count else { return nil }
            var buffer = [UInt8](repeating: 0, count: 512)
            let n = recv(fd, &buffer, buffer.count, 0)
            if n > 0 { answer = Array(buffer.prefix(n)) }
        }
        // "HTTP/1.1 200 OK"
        let line = String(decoding: answer.prefix { $0 != 13 }, as: UTF8.self).split(separator: " ")
        guard line.count >= 2, line[0].hasPrefix("HTTP/1."), let code = Int(line[1]) else { return nil }
        return code
    }
}
