import CloakCore

extension MessageWriter {
    /// A client's request as it goes on the wire, head and body in one buffer: `Host` from the
    /// request's host and port, the headers as given (without `Host`, `Content-Length` and
    /// `Transfer-Encoding`), and the body with its exact length. nil when the target or a header
    /// could end the request line or the head on a pooled connection every caller shares
    /// (request smuggling).
    static func request(_ request: UpstreamRequest) -> [UInt8]? {
        guard !request.target.isEmpty, request.target.utf8.allSatisfy({ $0 > 0x20 && $0 != 0x7F }) else { return nil }
        // A stream must promise its length: without one, the head would frame an empty body.
        if case .stream(_, nil) = request.content { return nil }
        // The host (from configuration or DNS) is a name or an address: nothing that ends a line.
        guard !request.host.isEmpty,
            request.host.utf8.allSatisfy({ $0 > 0x20 && $0 != 0x7F && $0 != UInt8(ascii: "/") })
        else {
            return nil
        }
        // The fixed parts (request line's words, Host, Content-Length, Connection) take at most
        // 128 bytes beside the target, the host and the headers.
        var size = request.target.utf8.count + request.host.utf8.count + request.body.count + 128
        for (name, value) in request.headers { size += name.utf8.count + value.utf8.count + 4 }
        var refused = false
        let bytes = ByteWriter.bytes(capacity: size) { out in
            out.write(request.method.rawValue)
            out.write(UInt8(ascii: " "))
            out.write(request.target)
            out.write(" HTTP/1.1\r\nHost: ")
            // An IPv6 literal is bracketed.
            let literal6 = request.host.utf8.contains(UInt8(ascii: ":"))
            if literal6 { out.write(UInt8(ascii: "[")) }
            out.write(request.host)
            if literal6 { out.write(UInt8(ascii: "]")) }
            if !((request.scheme == .https && request.port == 443) || (request.scheme == .http && request.port == 80)) {
                out.write(UInt8(ascii: ":"))
                out.writeDecimal(request.port)
            }
            out.write("\r\n")
            for (name, value) in request.headers {
                switch name.utf8.count {
                case 4 where name.caseInsensitiveEquals("host"): continue
                case 14 where name.caseInsensitiveEquals("content-length"): continue
                // The body always goes with its length: a coding too would frame it twice.
                case 17 where name.caseInsensitiveEquals("transfer-encoding"): continue
                default: break
                }
                guard HTTPSyntax.isToken(name), HTTPSyntax.isFieldValue(value) else {
                    refused = true
                    return
                }
                out.write(name)
                out.write(": ")
                out.write(value)
                out.write("\r\n")
            }
            // Every body goes with its exact length (a GET body without one would be read by the
            // upstream as the next request); POST, PUT and PATCH say 0 when they have none.
            // A streamed body follows the head piece by piece, of the length it promises.
            let length = request.content.length ?? 0
            if length > 0 || request.method == .POST || request.method == .PUT || request.method == .PATCH {
                out.write("Content-Length: ")
                out.writeDecimal(length)
                out.write("\r\n")
            }
            if !request.reuseConnection { out.write("Connection: close\r\n") }
            out.write("\r\n")
            if case .bytes(let bytes) = request.content { out.write(bytes) }
        }
        return refused ? nil : bytes
    }
}
