import CLibevent
import Glibc

/// The few libevent conveniences the server and client need, kept in one place.
enum Libevent {
    /// Makes the event bases safe for `event_active` from other threads. Idempotent.
    static let threadingReady: Bool = evthread_use_pthreads() == 0

    /// Every header of an evkeyvalq, in order.
    static func headers(_ list: UnsafeMutablePointer<evkeyvalq>?) -> [(name: String, value: String)] {
        var count = 0
        var node = list?.pointee.tqh_first
        while let n = node {
            count += 1
            node = n.pointee.next.tqe_next
        }
        var out: [(name: String, value: String)] = []
        out.reserveCapacity(count)  // counted first: one allocation instead of one per doubling
        node = list?.pointee.tqh_first
        while let n = node {
            if let k = n.pointee.key, let v = n.pointee.value {
                out.append((String(cString: k), String(cString: v)))
            }
            node = n.pointee.next.tqe_next
        }
        return out
    }

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

    /// A port nobody holds on `host`, found by binding port 0 without any reuse option.
    static func freePort(host: String) throws(HTTPServerError) -> Int {
        guard var address = socketAddress(host: host, port: 0) else { throw HTTPServerError("cannot parse listen address \(host)") }
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

    static func setNoDelay(_ fd: Int32) {
        var one: Int32 = 1
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    static func method(_ command: evhttp_cmd_type) -> HTTPMethod? {
        switch command {
        case EVHTTP_REQ_GET: return .GET
        case EVHTTP_REQ_POST: return .POST
        case EVHTTP_REQ_HEAD: return .HEAD
        case EVHTTP_REQ_PUT: return .PUT
        case EVHTTP_REQ_DELETE: return .DELETE
        case EVHTTP_REQ_OPTIONS: return .OPTIONS
        case EVHTTP_REQ_TRACE: return .TRACE
        case EVHTTP_REQ_CONNECT: return .CONNECT
        case EVHTTP_REQ_PATCH: return .PATCH
        default: return nil
        }
    }

    /// Every method evhttp knows: the router, not evhttp, answers 405 for the ones a path lacks.
    static let allMethods: UInt32 =
        EVHTTP_REQ_GET.rawValue | EVHTTP_REQ_POST.rawValue | EVHTTP_REQ_HEAD.rawValue | EVHTTP_REQ_PUT.rawValue
        | EVHTTP_REQ_DELETE.rawValue | EVHTTP_REQ_OPTIONS.rawValue | EVHTTP_REQ_TRACE.rawValue
        | EVHTTP_REQ_CONNECT.rawValue | EVHTTP_REQ_PATCH.rawValue
}
