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
        let bodyAllowed = allowsBody(status) && !tunnel
        let writesBody = bodyAllowed && !headOnly
        // The body read once: a whole one's bytes, or a stream's promised length.
        var bytes: [UInt8] = []
        var streamedLength: Int?
        switch response.content {
        case .bytes(let whole): bytes = whole
        case .stream(_, let length): streamedLength = length ?? 0
        }
        // The fixed parts (status line, Date, Content-Length, Connection, the blank line) take
        // at most 160 bytes beside the date's text.
        var size = 160 + date.count + (writesBody ? bytes.count : 0)
        for (name, value) in response.headers { size += name.utf8.count + value.utf8.count + 4 }
        return ByteWriter.bytes(capacity: size) { out in
            out.write("HTTP/1.1 ")
            out.writeDecimal(status)
            out.write(UInt8(ascii: " "))
            out.write(reasonPhrase(status))
            out.write("\r\n")
            var hasDate = false
            for (name, value) in response.headers where HTTPSyntax.isToken(name) && HTTPSyntax.isFieldValue(value) {
                switch name.utf8.count {
                case 4 where name.caseInsensitiveEquals("date"): hasDate = true
                case 10 where name.caseInsensitiveEquals("connection"): continue
                case 14 where name.caseInsensitiveEquals("content-length"): continue
                case 17 where name.caseInsensitiveEquals("transfer-encoding"): continue
                default: break
                }
                out.write(name)
                out.write(": ")
                out.write(value)
                out.write("\r\n")
            }
            if !hasDate {
                out.write("Date: ")
                out.write(date)
                out.write("\r\n")
            }
            if bodyAllowed {
                // A HEAD answer says the length a GET would get: its body's, else the length its
                // handler gave (an upstream's HEAD answer has no body), else none (RFC 9110 8.6).
                if let streamedLength {
                    // A stream promises its length (one without is broken at its first byte).
                    out.write("Content-Length: ")
                    out.writeDecimal(streamedLength)
                    out.write("\r\n")
                } else if !headOnly || !bytes.isEmpty {
                    out.write("Content-Length: ")
                    out.writeDecimal(bytes.count)
                    out.write("\r\n")
                } else if let given = response.headers.first(where: { $0.name.caseInsensitiveEquals("content-length") }
                ),
                    !given.value.isEmpty, given.value.utf8.count <= 18,
                    given.value.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
                {
                    out.write("Content-Length: ")
                    out.write(given.value)
                    out.write("\r\n")
                }
            }
            switch persistence {
            case .keepAlive11: break
            case .keepAlive10: out.write("Connection: keep-alive\r\n")
            case .close: out.write("Connection: close\r\n")
            }
            out.write("\r\n")
            if writesBody { out.write(bytes) }
        }
    }

    /// Whether an answer of `status` may have a body (none on 1xx, 204 and 304).
    static func allowsBody(_ status: Int) -> Bool { !(100..<200).contains(status) && status != 204 && status != 304 }

    /// Whether an answer's own headers ask to close (`Connection: close`).
    static func asksToClose(_ response: HTTPResponse) -> Bool {
        response.headers.contains {
            $0.name.utf8.count == 10 && $0.name.caseInsensitiveEquals("connection")
                && $0.value.caseInsensitiveEquals("close")
        }
    }

    /// `100 Continue`.
    static let continueLine = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)
}
