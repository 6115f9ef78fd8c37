import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A blocking HTTP/1.1 client over a plain socket, for tests that must send exactly the bytes
/// they mean (conflicting headers, truncated bodies, invalid UTF-8) and reuse one connection.
package final class RawHTTPClient {
    package struct Response: Sendable {
        package let status: Int
        package let headers: [(name: String, value: String)]
        package let body: [UInt8]

        package func header(_ name: String) -> String? {
            headers.first { $0.name.lowercased() == name.lowercased() }?.value
        }

        package var text: String { String(decoding: body, as: UTF8.self) }

        /// The body parsed with Foundation (tests only), or nil.
        package var json: [String: Any]? {
            (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]
        }

        /// `error.code` of a VGSError body.
        package var errorCode: Int? { (json?["error"] as? [String: Any])?["code"] as? Int }
    }

    package enum ClientError: Error {
        case connectFailed(Int32)
        case closed
        case timedOut
        case malformedResponse(String)
    }

    private let fd: Int32
    private var buffer: [UInt8] = []

    /// Connects to 127.0.0.1:`port`. `timeout` bounds every read; `receiveBuffer` sets a small
    /// SO_RCVBUF (a slow reader: the server's answer waits in its own buffers).
    package init(port: Int, timeout: TimeInterval = 10, receiveBuffer: Int32? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        if var size = receiveBuffer {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var tv = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - floor(timeout)) * 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        // No close here: the object is whole, so a throw still runs deinit, which closes the
        // socket. Closing it here as well closed whatever the number was given to next (another
        // test's SQLite file, which then failed with "disk I/O error").
        guard rc == 0 else { throw ClientError.connectFailed(errno) }
    }

    deinit { close(fd) }

    package func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw ClientError.closed }
            offset += n
        }
    }

    package func send(_ text: String) throws { try send(Array(text.utf8)) }

    /// Sends as much of `bytes` as the server takes: stops once the socket has stayed full for
    /// `patience` seconds (the server stopped reading) or the connection failed. The bytes sent.
    package func sendUntilHeldBack(_ bytes: [UInt8], patience: Double = 1) -> Int {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
            }
            if n > 0 {
                offset += n
                continue
            }
            guard n < 0, errno == EAGAIN || errno == EWOULDBLOCK else { break }
            var waiting = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            guard poll(&waiting, 1, Int32(patience * 1000)) > 0 else { break }
        }
        return offset
    }

    /// Sends a request with `Content-Length` and reads the response.
    package func request(
        _ method: String, _ path: String, body: [UInt8]? = nil, headers: [(String, String)] = []
    ) throws -> Response {
        // `Host: 127.0.0.1` unless the test names its own.
        let named = headers.contains { $0.0.lowercased() == "host" }
        var head = "\(method) \(path) HTTP/1.1\r\n" + (named ? "" : "Host: 127.0.0.1\r\n")
        for (n, v) in headers { head += "\(n): \(v)\r\n" }
        if let body { head += "Content-Length: \(body.count)\r\n" }
        head += "\r\n"
        try send(Array(head.utf8) + (body ?? []))
        return try readResponse(hasBody: method != "HEAD")
    }

    package func request(_ method: String, _ path: String, json: String, headers: [(String, String)] = []) throws
        -> Response
    {
        try request(method, path, body: Array(json.utf8), headers: [("Content-Type", "application/json")] + headers)
    }

    private func fill() throws {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n < 0 { throw errno == EAGAIN || errno == EWOULDBLOCK ? ClientError.timedOut : ClientError.closed }
        if n == 0 { throw ClientError.closed }
        buffer += chunk[0..<n]
    }

    /// Reads one response (Content-Length framed, or until close).
    package func readResponse(hasBody: Bool = true) throws -> Response {
        let separator: [UInt8] = [13, 10, 13, 10]
        var headerEnd: Int?
        while headerEnd == nil {
            if let r = buffer.firstRange(of: separator) { headerEnd = r.lowerBound; break }
            try fill()
        }
        let head = String(decoding: buffer[0..<headerEnd!], as: UTF8.self)
        buffer.removeFirst(headerEnd! + 4)
        var lines = head.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else { throw ClientError.malformedResponse(head) }
        let headers = lines.compactMap { line -> (name: String, value: String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        let length = headers.first { $0.name.lowercased() == "content-length" }.flatMap { Int($0.value) }
        if !hasBody || status == 204 || status == 304 || status < 200 {
            return Response(status: status, headers: headers, body: [])
        }
        if let length {
            while buffer.count < length { try fill() }
            let body = Array(buffer[0..<length])
            buffer.removeFirst(length)
            return Response(status: status, headers: headers, body: body)
        }
        do { while true { try fill() } } catch ClientError.closed {}
        let body = buffer
        buffer = []
        return Response(status: status, headers: headers, body: body)
    }

    /// True when the server closed the connection within `timeout` seconds (nothing more to read).
    package func waitForClose(timeout: TimeInterval) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            do { try fill() } catch ClientError.closed { return true } catch { continue }
        }
        return false
    }
}

extension RawHTTPClient {
    /// Polls `GET path` on a fresh connection until it answers `status` (a server starting, or
    /// recovering after a flood): true when it did within `attempts` tries, 25 ms apart.
    package static func waitUntil(port: Int, path: String = "/healthz", answers status: Int = 200, attempts: Int = 200)
        -> Bool
    {
        for _ in 0..<attempts {
            if (try? RawHTTPClient(port: port, timeout: 1).request("GET", path).status) == status { return true }
            usleep(25_000)
        }
        return false
    }
}

/// Polls for a state instead of sleeping a fixed time: true as soon as `condition` holds, false
/// once `seconds` passed without it.
package enum Poll {
    package static func until(seconds: Double = 30, every interval: useconds_t = 20_000, _ condition: () -> Bool)
        -> Bool
    {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return true }
            usleep(interval)
        }
        return condition()
    }
}
