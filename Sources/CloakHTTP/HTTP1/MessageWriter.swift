import CloakCore

/// Writes HTTP/1.1 messages, both directions: a server's answers here, a client's requests in
/// `MessageWriter+Request`, with the same byte helpers. A name or value that could end the head
/// (an upstream's answer passed through, a revealed value) is never written.
enum MessageWriter {
    /// How an answer ends its connection.
    enum Persistence: Equatable {
        /// HTTP/1.1 keeps it without a word.
        case keepAlive11
        /// An HTTP/1.0 client that asked to keep it: `Connection: keep-alive`.
        case keepAlive10
        /// `Connection: close`.
        case close
    }

    /// An answer, head and body in one buffer.
    /// - `headOnly`: the answer to a HEAD: the length a GET would get, no body.
    /// - `tunnel`: a 2xx to CONNECT: neither length nor body (RFC 9110 9.3.6).
    /// - `date`: the loop's cached IMF-fixdate, used when the answer has no `Date`.
    /// The answer's own `Connection`, `Content-Length` and `Transfer-Encoding` are the server's
    /// to write, and are left out.
    static func response(
        _ response: HTTPResponse, persistence: Persistence, headOnly: Bool, tunnel: Bool = false, date: [UInt8]
    ) -> [UInt8] {
        let status = response.status
        let bodyAllowed = !(100..<200).contains(status) && status != 204 && status != 304 && !tunnel
        let writesBody = bodyAllowed && !headOnly
        var size = 64 + date.count + (writesBody ? response.body.count : 0)
        for (name, value) in response.headers { size += name.utf8.count + value.utf8.count + 4 }
        var out: [UInt8] = []
        out.reserveCapacity(size)
        out.append("HTTP/1.1 ")
        out.appendDecimal(status)
        out.append(UInt8(ascii: " "))
        out.append(reasonPhrase(status))
        out.append("\r\n")
        var hasDate = false
        for (name, value) in response.headers where HTTPSyntax.isToken(name) && HTTPSyntax.isFieldValue(value) {
            switch name.utf8.count {
            case 4 where name.caseInsensitiveEquals("date"): hasDate = true
            case 10 where name.caseInsensitiveEquals("connection"): continue
            case 14 where name.caseInsensitiveEquals("content-length"): continue
            case 17 where name.caseInsensitiveEquals("transfer-encoding"): continue
            default: break
            }
            out.append(name)
            out.append(": ")
            out.append(value)
            out.append("\r\n")
        }
        if !hasDate {
            out.append("Date: ")
            out.append(contentsOf: date)
            out.append("\r\n")
        }
        if bodyAllowed {
            // A HEAD answer says the length a GET would get: its body's, else the length its
            // handler gave (an upstream's HEAD answer has no body), else none (RFC 9110 8.6).
            if case .stream(_, let length) = response.content {
                // A stream promises its length (one without is broken at its first byte).
                out.append("Content-Length: ")
                out.appendDecimal(length ?? 0)
                out.append("\r\n")
            } else if !headOnly || !response.body.isEmpty {
                out.append("Content-Length: ")
                out.appendDecimal(response.body.count)
                out.append("\r\n")
            } else if let given = response.headers.first(where: { $0.name.caseInsensitiveEquals("content-length") }),
                !given.value.isEmpty, given.value.utf8.count <= 18,
                given.value.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
            {
                out.append("Content-Length: ")
                out.append(given.value)
                out.append("\r\n")
            }
        }
        switch persistence {
        case .keepAlive11: break
        case .keepAlive10: out.append("Connection: keep-alive\r\n")
        case .close: out.append("Connection: close\r\n")
        }
        out.append("\r\n")
        if writesBody { out += response.body }
        return out
    }

    /// Whether an answer's own headers ask to close (`Connection: close`).
    static func asksToClose(_ response: HTTPResponse) -> Bool {
        response.headers.contains {
            $0.name.caseInsensitiveEquals("connection") && $0.value.caseInsensitiveEquals("close")
        }
    }

    /// `100 Continue`.
    static let continueLine = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)
}

extension [UInt8] {
    /// Appends `text`'s UTF-8 bytes in one copy (a `String.UTF8View` appended generically goes
    /// byte by byte).
    @inline(__always)
    mutating func append(_ text: String) {
        if let done: Void = text.utf8.withContiguousStorageIfAvailable({ append(contentsOf: $0) }) { return done }
        var text = text
        text.withUTF8 { append(contentsOf: $0) }
    }

    @inline(__always)
    mutating func append(_ text: StaticString) {
        append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// Appends a non-negative number's decimal digits (no string made).
    mutating func appendDecimal(_ value: Int) {
        precondition(value >= 0, "a negative length or status")
        var divisor = 1
        while divisor <= value / 10 { divisor *= 10 }
        var rest = value
        while divisor > 0 {
            append(UInt8(ascii: "0") + UInt8(rest / divisor))
            rest %= divisor
            divisor /= 10
        }
    }
}
