extension UpstreamRequest {
    /// The request as it goes on the wire, head and body in one buffer: `Host` from ``host`` and
    /// ``port``, the headers as given (without `Host`, `Content-Length` and `Transfer-Encoding`),
    /// and the body with its exact length. nil when the target or a header could end the request line or the head on
    /// a pooled connection every caller shares (request smuggling).
    func wireBytes() -> [UInt8]? {
        guard !target.isEmpty, target.utf8.allSatisfy({ $0 > 0x20 && $0 != 0x7F }) else { return nil }
        // The host (from configuration or DNS) is a name or an address: nothing that ends a line.
        guard !host.isEmpty, host.utf8.allSatisfy({ $0 > 0x20 && $0 != 0x7F && $0 != UInt8(ascii: "/") }) else {
            return nil
        }
        var size = target.utf8.count + host.utf8.count + body.count + 96
        for (name, value) in headers { size += name.utf8.count + value.utf8.count + 4 }
        var out: [UInt8] = []
        out.reserveCapacity(size)
        out.append(method.rawValue)
        out.append(32)
        out.append(target)
        out.append(" HTTP/1.1\r\nHost: ")
        // An IPv6 literal is bracketed.
        let literal6 = host.utf8.contains(UInt8(ascii: ":"))
        if literal6 { out.append(UInt8(ascii: "[")) }
        out.append(host)
        if literal6 { out.append(UInt8(ascii: "]")) }
        if !((scheme == .https && port == 443) || (scheme == .http && port == 80)) {
            out.append(UInt8(ascii: ":"))
            out.append(String(port))
        }
        out.append("\r\n")
        for (name, value) in headers {
            switch name.utf8.count {
            case 4 where name.caseInsensitiveEquals("host"): continue
            case 14 where name.caseInsensitiveEquals("content-length"): continue
            // The body always goes with its length: a coding too would frame it twice.
            case 17 where name.caseInsensitiveEquals("transfer-encoding"): continue
            default: break
            }
            guard HTTPSyntax.isToken(name), HTTPSyntax.isFieldValue(value) else { return nil }
            out.append(name)
            out.append(": ")
            out.append(value)
            out.append("\r\n")
        }
        // Every body goes with its exact length (a GET body without one would be read by the
        // upstream as the next request); POST, PUT and PATCH say 0 when they have none.
        if !body.isEmpty || method == .POST || method == .PUT || method == .PATCH {
            out.append("Content-Length: ")
            out.append(String(body.count))
            out.append("\r\n")
        }
        if !reuseConnection { out.append("Connection: close\r\n") }
        out.append("\r\n")
        out += body
        return out
    }
}
