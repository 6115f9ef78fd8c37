import Testing

@testable import CloakCore

/// `multipart/form-data` read as it arrives (issue 47): the same parts however the body is cut,
/// boundaries inside data never mistaken, and every malformed or truncated body refused.
@Suite struct MultipartParserTests {
    struct Reading: Equatable, CustomStringConvertible {
        var parts: [(head: MultipartParser.PartHead, bytes: [UInt8])] = []
        var complete = false
        var violation: MultipartParser.Violation?
        static func == (a: Reading, b: Reading) -> Bool {
            a.complete == b.complete && a.violation == b.violation
                && a.parts.elementsEqual(b.parts) { $0.head == $1.head && $0.bytes == $1.bytes }
        }
        var description: String {
            "\(parts.map { "\($0.head.name)[\($0.bytes.count)]" }) complete \(complete) \(violation.map { "\($0)" } ?? "")"
        }
    }

    static let boundary = Array("----cloak7MA4YWxkTrZu0gW".utf8)

    /// Feeds `body` `piece` bytes at a time, keeping what a call did not consume, then finishes.
    static func read(_ body: [UInt8], piece: Int? = nil, limits: MultipartParser.Limits = .init()) -> Reading {
        var parser = MultipartParser(boundary: boundary, limits: limits)
        var reading = Reading()
        var pending: [UInt8] = []
        var offset = 0
        repeat {
            let step = min(piece ?? body.count, body.count - offset)
            pending += body[offset..<(offset + step)]
            offset += step
            while true {
                let (consumed, event) = pending.withUnsafeBytes { parser.parse($0) }
                let given = pending
                pending.removeFirst(consumed)
                switch event {
                case .needMore:
                    if consumed == 0 { break } else { continue }
                case .partBegun(let head): reading.parts.append((head, []))
                case .bytes(let range): reading.parts[reading.parts.count - 1].bytes += given[range]
                case .partEnded: continue
                case .end:
                    reading.complete = true
                    continue
                case .violation(let violation):
                    reading.violation = violation
                    return reading
                }
                if case .needMore = event { break }
            }
        } while offset < body.count
        if reading.violation == nil, let violation = parser.finish() { reading.violation = violation }
        return reading
    }

    static func body(_ parts: [(String, String?, [UInt8])], closing: String = "--\r\n") -> [UInt8] {
        var out: [UInt8] = []
        for (name, fileName, bytes) in parts {
            out += Array("--".utf8) + boundary + Array("\r\n".utf8)
            var disposition = "Content-Disposition: form-data; name=\"\(name)\""
            if let fileName { disposition += "; filename=\"\(fileName)\"\r\nContent-Type: image/jpeg" }
            out += Array("\(disposition)\r\n\r\n".utf8) + bytes + Array("\r\n".utf8)
        }
        return out + Array("--".utf8) + boundary + Array(closing.utf8)
    }

    @Test(arguments: [nil, 1, 2, 3, 7, 31, 100] as [Int?])
    func partsAreReadAlikeHoweverTheBodyIsCut(piece: Int?) {
        // Data holding a CR, LF, dashes and most of a delimiter: never taken for a boundary.
        let tricky = Array("a\r\n--".utf8) + Self.boundary.dropLast() + Array("x\r\n-\r".utf8)
        let file = (0..<5000).map { UInt8(truncatingIfNeeded: $0) }
        let body = Self.body([
            ("kyc.name", nil, Array("Ada".utf8)), ("kyc.document", "pass.jpg", file), ("note", nil, tricky),
            ("empty", nil, []),
        ])
        let reading = Self.read(body, piece: piece)
        #expect(reading.violation == nil && reading.complete, "\(reading)")
        #expect(reading.parts.map { $0.head.name } == ["kyc.name", "kyc.document", "note", "empty"])
        #expect(reading.parts[1].head.fileName == "pass.jpg" && reading.parts[1].head.contentType == "image/jpeg")
        #expect(reading.parts[1].bytes == file)
        #expect(reading.parts[2].bytes == tricky)
        #expect(reading.parts[3].bytes == [])
        #expect(reading == Self.read(body))
    }

    @Test func anEmptyBodyAndAFinalCRLFAreRead() {
        #expect(Self.read(Array("--".utf8) + Self.boundary + Array("--".utf8)).complete)
        #expect(Self.read(Self.body([("a", nil, [1])])).complete)
        #expect(Self.read(Self.body([("a", nil, [1])], closing: "--")).complete)
    }

    @Test(
        arguments: [
            (
                "a preamble", Array("preamble\r\n".utf8) + body([("a", nil, [1])]),
                MultipartParser.Violation.missingBoundary
            ),
            ("another boundary", Array("--other\r\n".utf8), .missingBoundary),
            ("bytes after the end", body([("a", nil, [1])], closing: "--\r\nmore"), .trailingBytes),
            ("truncated in data", Array(body([("a", nil, [UInt8](repeating: 1, count: 100))]).prefix(120)), .truncated),
            ("truncated in a head", Array(body([("a", nil, [1])]).prefix(40)), .truncated),
            ("no closing boundary", Array(body([("a", nil, [1])]).dropLast(4)), .truncated),
            ("padding after a boundary", Array("--".utf8) + boundary + Array("  \r\n".utf8), .missingBoundary),
        ] as [(String, [UInt8], MultipartParser.Violation)])
    func malformedBodiesAreRefused(name: String, body: [UInt8], violation: MultipartParser.Violation) {
        #expect(Self.read(body).violation == violation, "\(name)")
        #expect(Self.read(body, piece: 1).violation == violation, "\(name), byte by byte")
    }

    @Test(arguments: [
        "Content-Disposition: form-data\r\n", "Content-Disposition: attachment; name=\"a\"\r\n",
        "Content-Type: text/plain\r\n", "Content-Disposition: form-data; name=\"a\"; name=\"b\"\r\n",
        "Content-Disposition: form-data; name=\"a\"\r\nContent-Disposition: form-data; name=\"b\"\r\n",
        "Content-Disposition: form-data; name=\"a\r\n",
        "Content-Disposition: form-data; name=\"a\"; filename*=UTF-8''x\r\n",
        "Content-Disposition: form-data; name=\"a\"\n",
        "Content-Disposition: form-data; name=\"a\"\r\nX-Bad\u{1}: 1\r\n",
        "Content-Disposition: form-data; name=\"a\"\r\nContent-Type: a\r\nContent-Type: b\r\n", "\r\n",
    ])
    func malformedPartHeadsAreRefused(head: String) {
        let body =
            Array("--".utf8) + Self.boundary + Array("\r\n\(head)\r\nx\r\n--".utf8) + Self.boundary + Array("--".utf8)
        let violation = Self.read(body).violation
        #expect(
            violation == .malformedPartHead || violation == .missingName,
            "\(head.debugDescription): \(String(describing: violation))")
    }

    @Test func limitsAreKept() {
        let many = Self.body((0..<5).map { ("p\($0)", nil, [1]) })
        #expect(Self.read(many, limits: .init(maxParts: 4)).violation == .tooManyParts)
        let bigHead =
            Array("--".utf8) + Self.boundary
            + Array("\r\nContent-Disposition: form-data; name=\"\(String(repeating: "n", count: 5000))\"\r\n\r\n".utf8)
        #expect(Self.read(bigHead, piece: 9).violation == .partHeadTooLarge)
        #expect(Self.read(Self.body([("", nil, [1])])).violation == .missingName)
    }

    @Test(arguments: [
        ("multipart/form-data; boundary=abc", "abc"), ("Multipart/Form-Data; charset=x; boundary=\"a b:c\"", "a b:c"),
        ("multipart/form-data;boundary=----WebKitFormBoundary7MA4YWxkTrZu0gW", "----WebKitFormBoundary7MA4YWxkTrZu0gW"),
    ])
    func boundariesAreRead(contentType: String, boundary: String) {
        #expect(MultipartParser.boundary(contentType: contentType) == Array(boundary.utf8))
    }

    @Test(arguments: [
        "multipart/mixed; boundary=abc", "multipart/form-data", "multipart/form-data; boundary=",
        "multipart/form-data; boundary=\(String(repeating: "a", count: 71))", "multipart/form-data; boundary=a;b",
        "multipart/form-data; boundary=a; boundary=b", "multipart/form-data; boundary=\"abc",
        "multipart/form-data; boundary=ab\u{e9}",
        "multipart/form-data; boundary=\"ab \"",
    ])
    func badBoundariesAreRefused(contentType: String) {
        #expect(MultipartParser.boundary(contentType: contentType) == nil, "\(contentType)")
    }
}
