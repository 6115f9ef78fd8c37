import CloakCore

/// The parser's line work: the status line, field lines, the end of the head (framing decided),
/// chunk sizes.
extension ResponseParser {
    // MARK: Lines

    /// Counts a line's bytes: the head's and the trailers' against ``maxHeadBytes``, chunk-size
    /// lines against ``maxBodyBytes`` (a body of many small chunks is bounded like any body).
    mutating func account(_ count: Int) throws(Failure) {
        if case .chunkSize = phase {
            framingBytes += count
            if framingBytes > maxBodyBytes { throw .bodyTooLarge }
            return
        }
        headBytes += count
        if headBytes > maxHeadBytes { throw .headTooLarge }
    }

    /// One line, without its CRLF.
    mutating func endOfLine(_ line: UnsafeRawBufferPointer) throws(Failure) {
        if line.contains(13) { throw .bareCarriageReturn }
        switch phase {
        case .statusLine:
            try statusLine(line)
        case .fields:
            if line.isEmpty { return try endOfHead() }
            if headers.isEmpty { headers.reserveCapacity(12) }
            headers.append(try Self.field(line))
            if headers.count > Self.maxFields { throw .headTooLarge }
        case .chunkSize:
            try chunkSize(line)
        case .trailers:
            // Trailer fields are checked like header fields and dropped (nothing forwards them).
            if line.isEmpty {
                finish(reusableFraming: true)
            } else {
                _ = try Self.field(line)
            }
        default:
            return
        }
    }

    /// `HTTP/1.1 200 OK`: version, a space, three digits, then nothing or a space and a reason.
    mutating func statusLine(_ l: UnsafeRawBufferPointer) throws(Failure) {
        guard l.count >= 12, l[0] == 72, l[1] == 84, l[2] == 84, l[3] == 80, l[4] == 47, l[5] == 49, l[6] == 46,
            l[7] == 49 || l[7] == 48, l[8] == 32, (49...53).contains(l[9]), (48...57).contains(l[10]),
            (48...57).contains(l[11])
        else { throw .invalidStatusLine }
        if l.count > 12 {
            guard l[12] == 32, !l[13...].contains(where: HTTPSyntax.isControlByte) else { throw .invalidStatusLine }
        }
        isHTTP10 = l[7] == 48
        status = Int(l[9] - 48) * 100 + Int(l[10] - 48) * 10 + Int(l[11] - 48)
        if status == 101 { throw .switchingProtocols }
        headers.removeAll()
        phase = .fields
    }

    /// `name: value`, the value without surrounding spaces.
    static func field(_ line: UnsafeRawBufferPointer) throws(Failure) -> (name: String, value: String) {
        if line[0] == 32 || line[0] == 9 { throw .obsoleteLineFolding }
        guard let colon = line.firstIndex(of: 58), colon > 0 else { throw .invalidFieldName }
        guard line[..<colon].allSatisfy(HTTPSyntax.isTokenByte) else { throw .invalidFieldName }
        var start = colon + 1
        var end = line.count
        while start < end, line[start] == 32 || line[start] == 9 { start += 1 }
        while end > start, line[end - 1] == 32 || line[end - 1] == 9 { end -= 1 }
        if line[start..<end].contains(where: HTTPSyntax.isControlByte) { throw .invalidFieldValue }
        return (
            String(decoding: UnsafeRawBufferPointer(rebasing: line[..<colon]), as: UTF8.self),
            String(decoding: UnsafeRawBufferPointer(rebasing: line[start..<end]), as: UTF8.self)
        )
    }

    /// The fields are in: decides how the body is framed (RFC 9112 §6.3).
    mutating func endOfHead() throws(Failure) {
        if status < 200 {
            // An interim answer (100 Continue, 103 Early Hints): the real one follows.
            phase = .statusLine
            return
        }
        var length: Int?
        var codings: [Substring] = []
        for (name, value) in headers {
            switch name.utf8.count {
            case 14 where name.caseInsensitiveEquals("content-length"):
                guard let parsed = Self.contentLength(value) else { throw .invalidContentLength }
                if let length, length != parsed { throw .conflictingContentLength }
                length = parsed
            case 17 where name.caseInsensitiveEquals("transfer-encoding"):
                codings += value.split(separator: ",", omittingEmptySubsequences: false)
            default:
                break
            }
        }
        let framedByCodings = !codings.isEmpty
        if framedByCodings {
            if length != nil { throw .lengthAndTransferEncoding }
            guard !isHTTP10, codings.count == 1, Self.trimmed(codings[0]).caseInsensitiveEquals("chunked") else {
                throw .unsupportedTransferCoding
            }
        }
        // RFC 9112 §9.3: `Connection: close`, or HTTP/1.0 without keep-alive, ends it.
        let keepsConnection = !HTTPSyntax.asksToClose(headers, isHTTP10: isHTTP10)
        if bodyless || status == 204 || status == 304 {
            return finish(reusableFraming: keepsConnection)
        }
        if framedByCodings {
            phase = .chunkSize
            reusable = keepsConnection  // confirmed at the last chunk
            return
        }
        guard let length else {
            phase = .untilClose
            return
        }
        if length > maxBodyBytes { throw .bodyTooLarge }
        // Room for what is announced, up to 64 KiB: a length alone does not get 8 MiB.
        body.reserveCapacity(min(length, 64 << 10))
        if length == 0 { return finish(reusableFraming: keepsConnection) }
        reusable = keepsConnection
        phase = .body(remaining: length)
    }

    mutating func finish(reusableFraming: Bool) {
        if case .trailers = phase {
            // `reusable` was decided at the head.
        } else {
            reusable = reusableFraming
        }
        phase = .done
    }

    /// `1*HEXDIG [ ; extension ]`; 0 ends the body (trailers follow).
    mutating func chunkSize(_ line: UnsafeRawBufferPointer) throws(Failure) {
        var size = 0
        var digits = 0
        for b in line {
            guard let v = HTTPSyntax.hexValue(b) else { break }
            digits += 1
            guard digits <= 15 else { throw .invalidChunk }
            size = size << 4 | Int(v)
        }
        guard digits > 0 else { throw .invalidChunk }
        if digits < line.count {
            // Only an extension may follow: optional spaces, then `;`.
            var rest = UnsafeRawBufferPointer(rebasing: line[digits...]).drop { $0 == 32 || $0 == 9 }
            guard rest.first == 59 else { throw .invalidChunk }
            rest = rest.dropFirst()
            if rest.contains(where: HTTPSyntax.isControlByte) { throw .invalidChunk }
        }
        if size == 0 {
            phase = .trailers
            return
        }
        guard body.count + size <= maxBodyBytes else { throw .bodyTooLarge }
        phase = .chunkData(remaining: size)
    }

    /// The value of `Content-Length`: 1 to 15 digits, nothing else.
    static func contentLength(_ value: String) -> Int? {
        let utf8 = value.utf8
        guard (1...15).contains(utf8.count) else { return nil }
        var n = 0
        for b in utf8 {
            guard (48...57).contains(b) else { return nil }
            n = n * 10 + Int(b - 48)
        }
        return n
    }

    /// `text` without the spaces and tabs around it.
    static func trimmed(_ text: Substring) -> String {
        String(text.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
