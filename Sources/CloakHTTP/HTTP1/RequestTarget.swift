/// A request's target read in the form RFC 9112 3.2 gives it by method, and the `Host` field
/// checked against RFC 9110 7.2 (``isValidHost(_:)``). Pure; a target that fits no form is
/// refused (400), never guessed at.
///
/// - origin form, `/path?query`: every request but CONNECT and `OPTIONS *`;
/// - absolute form, `http://host[:port]/path?query` (or `https`): a proxy's request; its authority
///   replaces `Host` (RFC 9112 3.2.2), and it has no user information (refused);
/// - authority form, `host:port`: CONNECT only, and CONNECT only takes it;
/// - asterisk form, `*`: `OPTIONS` only.
///
/// Percent-escapes must be whole (`%` and two hex digits); the decoded path is what routes
/// compare, the raw one what a proxy forwards.
struct RequestTarget: Sendable, Equatable {
    /// The path as sent, still percent-encoded (`/` when an absolute form has none, `*` for the
    /// asterisk form, empty for CONNECT).
    var rawPath: String
    /// ``rawPath`` percent-decoded.
    var path: String
    /// The query after `?`, as sent.
    var query: String?
    /// The absolute form's scheme, lowercased (`http` or `https`).
    var scheme: String?
    /// The absolute or authority form's host (lowercased, IPv6 without brackets) and port
    /// (0 when an absolute form names none).
    var host: String?
    var port = 0
    /// The absolute form's authority as sent (`host:port`): the request's `Host`.
    var authority: String?

    typealias Bytes = UnsafeBufferPointer<UInt8>

    /// Reads `target` for a request of `method`; nil when it fits none of the forms the method
    /// may use.
    static func parse(_ target: String, method: String) -> RequestTarget? {
        var bytes = target
        return bytes.withUTF8 { parse(target, bytes: $0, method: method) }
    }

    /// Reads `target`, whose bytes are `bytes`.
    static func parse(_ target: String, bytes: Bytes, method: String) -> RequestTarget? {
        guard let first = bytes.first else { return nil }
        if method == "CONNECT" {
            guard let (host, port) = authority(bytes[...]), port > 0 else { return nil }
            return RequestTarget(rawPath: "", path: "", host: host, port: port)
        }
        if bytes.count == 1 && first == UInt8(ascii: "*") {
            guard method == "OPTIONS" else { return nil }
            return RequestTarget(rawPath: "*", path: "*")
        }
        if first == UInt8(ascii: "/") {
            // The common case: a path without escapes or query is its own decoding.
            if !bytes.contains(where: { $0 == UInt8(ascii: "%") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") })
            {
                return RequestTarget(rawPath: target, path: target)
            }
            return origin(bytes[...])
        }
        return absolute(bytes)
    }

    /// `/path?query`.
    private static func origin(_ bytes: Slice<Bytes>) -> RequestTarget? {
        guard bytes.first == UInt8(ascii: "/"), !bytes.contains(UInt8(ascii: "#")) else { return nil }
        let question = bytes.firstIndex(of: UInt8(ascii: "?"))
        let rawPath = bytes[..<(question ?? bytes.endIndex)]
        guard let path = decode(rawPath) else { return nil }
        var target = RequestTarget(rawPath: String(decoding: rawPath, as: UTF8.self), path: path)
        if let question {
            let query = bytes[(question + 1)...]
            guard isWellEscaped(query) else { return nil }
            target.query = String(decoding: query, as: UTF8.self)
        }
        return target
    }

    /// `scheme://authority[/path][?query]`.
    private static func absolute(_ bytes: Bytes) -> RequestTarget? {
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), bytes[colon...].starts(with: "://".utf8) else {
            return nil
        }
        let scheme = String(decoding: bytes[..<colon], as: UTF8.self).lowercased()
        guard scheme == "http" || scheme == "https" else { return nil }
        let rest = bytes[(colon + 3)...]
        let end = rest.firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") } ?? rest.endIndex
        let authorityBytes = rest[..<end]
        guard !authorityBytes.contains(UInt8(ascii: "@")),
            let (host, port) = authority(authorityBytes, portOptional: true),
            !host.isEmpty
        else { return nil }
        var pathAndQuery = Array(rest[end...])
        if pathAndQuery.first != UInt8(ascii: "/") { pathAndQuery.insert(UInt8(ascii: "/"), at: 0) }
        guard var target = pathAndQuery.withUnsafeBufferPointer({ origin($0[...]) }) else { return nil }
        target.scheme = scheme
        target.host = host
        target.port = port
        target.authority = String(decoding: authorityBytes, as: UTF8.self)
        return target
    }

    /// `host:port` (the port optional where allowed): host lowercased, brackets dropped.
    private static func authority(_ bytes: Slice<Bytes>, portOptional: Bool = false) -> (String, Int)? {
        guard isValidHost(bytes) else { return nil }
        var hostPart = bytes
        var port = 0
        let lastColon = bytes.lastIndex(of: UInt8(ascii: ":"))
        let closing = bytes.lastIndex(of: UInt8(ascii: "]"))
        if let lastColon, closing.map({ lastColon > $0 }) ?? true {
            let digits = bytes[(lastColon + 1)...]
            guard !digits.isEmpty || portOptional else { return nil }
            if !digits.isEmpty {
                guard let value = Int(String(decoding: digits, as: UTF8.self)), value <= 65535 else { return nil }
                port = value
            }
            hostPart = bytes[..<lastColon]
        } else if !portOptional {
            return nil
        }
        if hostPart.first == UInt8(ascii: "[") { hostPart = hostPart.dropFirst().dropLast() }
        guard !hostPart.isEmpty else { return nil }
        return (String(decoding: hostPart, as: UTF8.self).lowercased(), port)
    }

    /// Whether a `Host` value (or an authority) is `uri-host [":" port]`: a bracketed IPv6
    /// literal, or a reg-name / IPv4 of unreserved, sub-delims and whole percent-escapes, and a
    /// port of at most five digits. Empty is allowed (RFC 9112 3.2, a target without authority).
    static func isValidHost(_ value: Bytes) -> Bool { isValidHost(value[...]) }

    static func isValidHost(_ value: String) -> Bool {
        var value = value
        return value.withUTF8 { isValidHost($0) }
    }

    private static func isValidHost(_ value: Slice<Bytes>) -> Bool {
        var bytes = value
        if bytes.first == UInt8(ascii: "[") {
            guard let close = bytes.firstIndex(of: UInt8(ascii: "]")) else { return false }
            let literal = bytes[(bytes.startIndex + 1)..<close]
            guard !literal.isEmpty,
                literal.allSatisfy({
                    HTTPSyntax.hexValue($0) != nil || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: ".")
                })
            else { return false }
            bytes = bytes[(close + 1)...]
            guard bytes.isEmpty || bytes.first == UInt8(ascii: ":") else { return false }
            return isPort(bytes.dropFirst())
        }
        if let colon = bytes.firstIndex(of: UInt8(ascii: ":")) {
            guard isPort(bytes[(colon + 1)...]) else { return false }
            bytes = bytes[..<colon]
        }
        var sawPercent = false
        for byte in bytes {
            guard isRegNameByte(byte) else { return false }
            if byte == UInt8(ascii: "%") { sawPercent = true }
        }
        return !sawPercent || isWellEscaped(bytes)
    }

    private static func isPort(_ digits: Slice<Bytes>) -> Bool {
        digits.count <= 5 && digits.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }

    /// unreserved, sub-delims and `%`, as bits by byte value (bytes 0–63, then 64–127).
    private static let regNameBits: (UInt64, UInt64) = {
        var low: UInt64 = 0
        var high: UInt64 = 0
        let allowed = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~!$&'()*+,;=%".utf8)
        for byte in allowed {
            if byte < 64 { low |= 1 << UInt64(byte) } else { high |= 1 << UInt64(byte - 64) }
        }
        return (low, high)
    }()

    @inline(__always)
    private static func isRegNameByte(_ byte: UInt8) -> Bool {
        if byte < 64 { return (regNameBits.0 >> UInt64(byte)) & 1 == 1 }
        if byte < 128 { return (regNameBits.1 >> UInt64(byte - 64)) & 1 == 1 }
        return false
    }

    /// Every `%` starts a whole escape.
    private static func isWellEscaped(_ bytes: Slice<Bytes>) -> Bool {
        var i = bytes.startIndex
        while i < bytes.endIndex {
            if bytes[i] == UInt8(ascii: "%") {
                guard i + 2 < bytes.endIndex, HTTPSyntax.hexValue(bytes[i + 1]) != nil,
                    HTTPSyntax.hexValue(bytes[i + 2]) != nil
                else { return false }
                i += 3
            } else {
                i += 1
            }
        }
        return true
    }

    /// The path percent-decoded (`+` stays `+`); nil for a broken escape.
    private static func decode(_ bytes: Slice<Bytes>) -> String? {
        guard isWellEscaped(bytes) else { return nil }
        guard bytes.contains(UInt8(ascii: "%")) else { return String(decoding: bytes, as: UTF8.self) }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var i = bytes.startIndex
        while i < bytes.endIndex {
            if bytes[i] == UInt8(ascii: "%"), let high = HTTPSyntax.hexValue(bytes[i + 1]),
                let low = HTTPSyntax.hexValue(bytes[i + 2])
            {
                out.append(high << 4 | low)
                i += 3
            } else {
                out.append(bytes[i])
                i += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
