import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Small helpers for tests that need raw loopback sockets.
package enum LoopbackSocket {
    /// A TCP socket bound to 127.0.0.1:`port` (0: any free port), and the port it got.
    package static func bound(port: Int = 0, nonBlocking: Bool = false) -> (fd: Int32, port: Int) {
        let type = Int32(SOCK_STREAM.rawValue) | (nonBlocking ? Int32(SOCK_NONBLOCK.rawValue) : 0)
        let fd = socket(AF_INET, type, 0)
        var addr = address(port)
        _ = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, 16) } }
        var length = socklen_t(16)
        _ = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return (fd, Int(UInt16(bigEndian: addr.sin_port)))
    }

    /// A listening socket on a free loopback port.
    package static func listening(backlog: Int32 = 16) -> (fd: Int32, port: Int) {
        let s = bound()
        listen(s.fd, backlog)
        return s
    }

    /// Accepts on `listener` until it is closed, each connection handled on a thread of its own
    /// (`handle` owns the descriptor and closes it).
    package static func serveEach(_ listener: Int32, _ handle: @escaping @Sendable (Int32) -> Void) {
        Thread {
            while true {
                let c = accept(listener, nil, nil)
                if c < 0 { return }
                Thread { handle(c) }.start()
            }
        }.start()
    }

    /// Starts connecting `fd` to 127.0.0.1:`port`; true when connected (or, non-blocking, under way).
    @discardableResult
    package static func connect(_ fd: Int32, to port: Int) -> Bool {
        var addr = address(port)
        return withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, 16) }
        } == 0
    }

    /// Whether something accepts connections on 127.0.0.1:`port` (the probe closes at once, so
    /// a one-connection-at-a-time server such as `openssl s_server` is free again).
    package static func isListening(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        return connect(fd, to: port)
    }

    private static func address(_ port: Int) -> sockaddr_in {
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        return addr
    }
}

/// A loopback port nobody holds right now (bound without any reuse option, then released).
///
/// Tests that start a separate process pick their port here: a random one could be the port of
/// a test server already running, and SO_REUSEPORT would let the two share it silently.
package func freeLoopbackPort() -> Int {
    let s = LoopbackSocket.bound()
    close(s.fd)
    return s.port
}
