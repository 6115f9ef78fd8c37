import Testing

@testable import CloakCore

/// What the writer makes, the parser reads back (names with quotes and line breaks escaped).
@Suite struct MultipartWriterTests {
    @Test func aWrittenBodyReadsBack() throws {
        var writer = try #require(MultipartWriter(boundary: "cloak-3f9a1c2e7b5d4e6f8a0b"))
        let file = (0..<3000).map { UInt8(truncatingIfNeeded: $0) }
        let body = writer.body([
            (name: "kyc.name", fileName: nil, contentType: nil, bytes: Array("Ada".utf8)),
            (name: "kyc.document", fileName: "my \"pass\"\r\n.jpg", contentType: "image/jpeg", bytes: file),
        ])
        #expect(writer.contentType == "multipart/form-data; boundary=cloak-3f9a1c2e7b5d4e6f8a0b")
        var parser = MultipartParser(boundary: writer.boundary)
        var parts: [(MultipartParser.PartHead, [UInt8])] = []
        var rest = body
        while !rest.isEmpty {
            let (consumed, event) = rest.withUnsafeBytes { parser.parse($0) }
            let given = rest
            rest.removeFirst(consumed)
            switch event {
            case .partBegun(let head): parts.append((head, []))
            case .bytes(let range): parts[parts.count - 1].1 += given[range]
            case .violation(let violation): Issue.record("\(violation)")
            default: break
            }
            if case .violation = event { break }
        }
        #expect(parser.finish() == nil)
        #expect(parts.map(\.0.name) == ["kyc.name", "kyc.document"])
        #expect(parts[1].0.fileName == "my %22pass%22%0D%0A.jpg" && parts[1].0.contentType == "image/jpeg")
        #expect(parts[0].1 == Array("Ada".utf8) && parts[1].1 == file)
    }

    @Test func badBoundariesAreRefused() {
        #expect(MultipartWriter(boundary: "") == nil)
        #expect(MultipartWriter(boundary: String(repeating: "a", count: 71)) == nil)
        #expect(MultipartWriter(boundary: "a\"b") == nil)
    }
}
