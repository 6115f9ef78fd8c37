import CLibevent
import Foundation
import Glibc

/// Socket addresses and options the server and client need (Glibc only: libevent is called
/// from the four `Internals/*+Calls.swift` files alone).
enum Sockets {
    /// A socket address for a numeric IPv4 or IPv6 host (or `localhost`) and a port (0 = any free one).
    static func socketAddress(host: String, port: Int) -> (storage: sockaddr_storage, length: Int32)? {
        var storage = sockaddr_storage()
        let name = host == "localhost" ? "127.0.0.1" : host
        if name.contains(":") {
            var a = sockaddr_in6()
            a.sin6_family = sa_family_t(AF_INET6)
            a.sin6_port = in_port_t(UInt16(port).bigEndian)
            guard inet_pton(AF_INET6, name, &a.sin6_addr) == 1 else { return nil }
            withUnsafeMutableBytes(of: &storage) { $0.storeBytes(of: a, as: sockaddr_in6.self) }
            return (storage, Int32(MemoryLayout<sockaddr_in6>.size))
        }
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_port = in_port_t(UInt16(port).bigEndian)
        guard inet_pton(AF_INET, name, &a.sin_addr) == 1 else { return nil }
        withUnsafeMutableBytes(of: &storage) { $0.storeBytes(of: a, as: sockaddr_in.self) }
        return (storage, Int32(MemoryLayout<sockaddr_in>.size))
    }

    /// Throws when another process listens on `host:port` already. Cloak's loops bind with
    /// SO_REUSEPORT, so a second `cloak serve` of the same user on the same address would bind
    /// too and silently take half the connections (issue 55, item 9). A socket with only
    /// SO_REUSEADDR cannot bind a port any socket listens on (TIME_WAIT left by an earlier
    /// process does not count), so the probe says whether someone serves it.
    static func refuseIfServed(host: String, port: Int) throws(HTTPServerError) {
        guard var address = socketAddress(host: host, port: port) else {
            throw HTTPServerError("cannot parse listen address \(host)")
        }
        let fd = socket(Int32(address.storage.ss_family), Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw HTTPServerError("cannot create a socket") }
        defer { close(fd) }
        var on: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
        let rc = withUnsafeMutablePointer(to: &address.storage) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(address.length)) }
        }
        if rc != 0 && errno == EADDRINUSE {
            throw HTTPServerError("\(host):\(port) is already served by another process (Address already in use)")
        }
    }

    /// A port nobody holds on `host`, found by binding port 0 without any reuse option.
    static func freePort(host: String) throws(HTTPServerError) -> Int {
        guard var address = socketAddress(host: host, port: 0) else {
            throw HTTPServerError("cannot parse listen address \(host)")
        }
        let family = Int32(address.storage.ss_family)
        let fd = socket(family, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw HTTPServerError("cannot create a socket") }
        defer { close(fd) }
        let rc = withUnsafeMutablePointer(to: &address.storage) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(address.length)) }
        }
        guard rc == 0, let port = boundPort(fd) else { throw HTTPServerError("cannot find a free port on \(host)") }
        return port
    }

    /// The port a socket is bound to.
    static func boundPort(_ fd: Int32) -> Int? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let rc = withUnsafeMutablePointer(to: &storage) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard rc == 0 else { return nil }
        switch Int32(storage.ss_family) {
        case AF_INET:
            return withUnsafePointer(to: &storage) { p in
                p.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) }
            }
        case AF_INET6:
            return withUnsafePointer(to: &storage) { p in
                p.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin6_port)) }
            }
        default: return nil
        }
    }

    /// A non-blocking, close-on-exec TCP socket with TCP_NODELAY, connecting to a numeric
    /// `address`: its descriptor and whether the connect already ended; nil when it failed at once.
    static func connecting(to address: String, port: Int) -> (fd: Int32, connected: Bool)? {
        guard var socketAddress = socketAddress(host: address, port: port) else { return nil }
        let family = Int32(socketAddress.storage.ss_family)
        let fd = socket(
            family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        setNoDelay(fd)
        // Upstream connections only: an answer must have arrived after its request was sent.
        _ = CLibevent_stamp_arrivals(fd)
        let rc = withUnsafeMutablePointer(to: &socketAddress.storage) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(socketAddress.length)) }
        }
        guard rc == 0 || errno == EINPROGRESS else {
            close(fd)
            return nil
        }
        return (fd, rc == 0)
    }

    /// The error a non-blocking connect ended with (0: connected).
    static func connectError(_ fd: Int32) -> Int32 {
        var error: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0 else { return errno }
        return error
    }

    /// Sends what the socket takes now, never raising SIGPIPE: the count, or -1 with `errno`.
    static func send(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int {
        Glibc.send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL))
    }

    /// A moment on the clock the kernel stamps received segments with (CLOCK_REALTIME), in
    /// nanoseconds.
    /// (Foundation's `Date` reads that clock: naming `timespec` here, in a file that imports
    /// CLibevent, made its members CLibevent's for the whole module in a release build.)
    static func now() -> Int64 {
        Int64(Date().timeIntervalSince1970 * 1e9)
    }

    /// When the first byte waiting in `fd` arrived (``now()``'s clock; the socket stamped with
    /// `SO_TIMESTAMPNS`); nil when nothing waits or the kernel gave no stamp. Nothing is consumed.
    static func firstArrival(_ fd: Int32) -> Int64? {
        var seconds: Int64 = 0
        var nanoseconds = 0
        guard CLibevent_first_arrival(fd, &seconds, &nanoseconds) == 1 else { return nil }
        return seconds * 1_000_000_000 + Int64(nanoseconds)
    }

    /// Whether reading `fd` now would return something (bytes, the peer's end, an error)
    /// instead of blocking. Nothing is consumed.
    static func hasInput(_ fd: Int32) -> Bool {
        var byte: UInt8 = 0
        guard recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) < 0 else { return true }
        return errno != EAGAIN && errno != EWOULDBLOCK
    }

    /// Whether the last call failed only because the socket would block.
    static var wouldBlock: Bool { errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR }

    static func setNoDelay(_ fd: Int32) {
        var one: Int32 = 1
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    /// The numeric text of an IPv4 or IPv6 socket address.
    static func numeric(_ sa: UnsafeMutablePointer<sockaddr>?) -> String? {
        guard let sa else { return nil }
        switch Int32(sa.pointee.sa_family) {
        case AF_INET:
            return sa.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { numeric(AF_INET, $0.pointee.sin_addr) }
        case AF_INET6:
            return sa.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { numeric(AF_INET6, $0.pointee.sin6_addr) }
        default: return nil
        }
    }

    /// The numeric text of an IPv4 address.
    static func numeric(_ family: Int32, _ address: in_addr) -> String? {
        withUnsafePointer(to: address) { text(family, UnsafeRawPointer($0)) }
    }

    /// The numeric text of an IPv6 address.
    static func numeric(_ family: Int32, _ address: in6_addr) -> String? {
        withUnsafePointer(to: address) { text(family, UnsafeRawPointer($0)) }
    }

    /// The one `inet_ntop` call: the address at `address` of `family` as text.
    private static func text(_ family: Int32, _ address: UnsafeRawPointer) -> String? {
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: Int(INET6_ADDRSTRLEN)) { buffer in
            guard let base = buffer.baseAddress, inet_ntop(family, address, base, socklen_t(buffer.count)) != nil
            else { return nil }
            return String(cString: base)
        }
    }

    /// The numeric address of a connected socket's peer.
    static func peer(_ fd: Int32) -> String? {
        guard fd >= 0 else { return nil }
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        return withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                getpeername(fd, sa, &length) == 0 ? numeric(sa) : nil
            }
        }
    }
}
