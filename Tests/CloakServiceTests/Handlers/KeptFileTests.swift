import CloakTesting
import Foundation
import Testing

/// Issue 57 item 2: keeping an anonymous upload keeps its content under the canonical alias, and
/// a 503 with `Retry-After` is only ever a condition retrying can fix.
@Suite(.tags(.racy, .sockets)) struct KeptFileTests {
    static let files = [("Authorization", "Bearer \(TestServer.filesToken)")]
    static let creator = [("Authorization", "Bearer \(TestServer.createOnlyToken)")]

    static func keep(_ client: RawHTTPClient, _ intent: String) throws -> String? {
        let kept = try client.request(
            "POST", "/aliases/keep", json: #"{"data":[{"alias":"\#(intent)"}]}"#, headers: creator)
        let item = (kept.json?["data"] as? [[String: Any]])?.first
        return (item?["canonical"] as? [String: Any])?["alias"] as? String
    }

    @Test func aKeptUploadIsReadByItsCanonicalAliasAndOutlivesItsIntent() throws {
        try withTestServer(TestServer()) { server throws in
            let client = try server.client()
            let document = FileUploadTests.png(padding: 200_000)
            let answer = try FileUploadTests.upload(
                client,
                FileUploadTests.multipart([
                    ("kyc.full_name", nil, Array("J D".utf8)), ("kyc.document", "a.png", document),
                ]))
            #expect(answer.status == 200, "\(answer.text)")
            #expect(answer.header("Cloak-Intent-Expires") != nil)
            let intent = try #require(answer.json?["kyc.document[0]"] as? String)
            let canonical = try #require(try Self.keep(client, intent))
            #expect(canonical != intent)

            let read = try client.request("GET", "/files/\(canonical)", headers: Self.files)
            #expect(read.status == 200 && read.body == document, "\(read.status) \(read.text.prefix(300))")
            // The content belongs to the canonical record now: the intent's expiry (its record swept,
            // its file rows with it) cannot take it.
            let owner = try FileUploadTests.sqlite(
                server,
                "SELECT count(*) FROM files f JOIN aliases a ON a.record_id = f.record_id WHERE a.alias = '\(canonical)'"
            )
            #expect(owner == "1")
            // Keeping again answers the same alias and leaves the content where it is.
            #expect(try Self.keep(client, intent) == canonical)
            #expect(try client.request("GET", "/files/\(canonical)", headers: Self.files).body == document)
            // The intent's alias reads no content any more: 404, never a 503 to retry for ever.
            let old = try client.request("GET", "/files/\(intent)", headers: Self.files)
            #expect(old.status == 404 && old.header("Retry-After") == nil, "\(old.status) \(old.text)")
        }
    }

    @Test func contentThatIsGoneIsA404WithoutRetryAfter() throws {
        try withTestServer(TestServer()) { server throws in
            let client = try server.client()
            let answer = try FileUploadTests.upload(
                client,
                FileUploadTests.multipart([
                    ("kyc.full_name", nil, Array("J D".utf8)), ("kyc.document", "a.png", FileUploadTests.png()),
                ]),
                headers: [("Cloak-Upload", "1")] + Self.creator)
            let alias = try #require(answer.json?["kyc.document[0]"] as? String, "\(answer.text)")
            try FileUploadTests.sqlite(server, "DELETE FROM file_chunks; DELETE FROM files;")
            let gone = try client.request("GET", "/files/\(alias)", headers: Self.files)
            #expect(gone.status == 404 && gone.header("Retry-After") == nil, "\(gone.status) \(gone.text)")
        }
    }
}

/// Issue 57 item 9: a file refusal names the field's limits and what the file was found to be.
@Suite(.tags(.racy, .sockets)) struct FileRefusalFactsTests {
    static func limits(_ r: RawHTTPClient.Response) -> [String: Any]? {
        ((r.json?["error"] as? [String: Any])?["extraInfo"] as? [String: Any])?["fileLimits"] as? [String: Any]
    }

    @Test func aRefusedFileNamesTheLimitAndItsDetectedType() throws {
        try withTestServer(TestServer()) { server throws in
            let client = try server.client()
            // Judged at its first KiB, before the rest is read: the client sends only that much.
            let gif = Array("GIF89a".utf8) + [UInt8](repeating: 0x20, count: 100_000)
            let body = FileUploadTests.multipart([
                ("kyc.full_name", nil, Array("J D".utf8)), ("kyc.document", "a.gif", gif),
            ])
            var head = "POST /forms/kyc/tokens HTTP/1.1\r\nHost: 127.0.0.1\r\nCloak-Upload: 1\r\n"
            head += "Content-Type: multipart/form-data; boundary=\(FileUploadTests.boundary)\r\n"
            head += "Content-Length: \(body.count)\r\n\r\n"
            try client.send(Array(head.utf8) + body.prefix(4_096))
            let refused = try client.readResponse()
            #expect(refused.status == 422, "\(refused.text)")
            let facts = try #require(Self.limits(refused)?["kyc.document"] as? [String: Any], "\(refused.text)")
            #expect(facts["detectedTypes"] as? [String] == ["image/gif"])
            #expect((facts["allowedTypes"] as? [String])?.contains("image/jpeg") == true)
            #expect(facts["maxBytes"] as? Int == 10_485_760)
            #expect(refused.text.contains("the content is image/gif"), "\(refused.text)")

            // A small one, judged when the body ends, says the same.
            let tiny = Array("GIF89a".utf8) + [UInt8](repeating: 0x20, count: 10)
            let small = try FileUploadTests.upload(
                try server.client(),
                FileUploadTests.multipart([("kyc.full_name", nil, Array("J D".utf8)), ("kyc.document", "b.gif", tiny)]))
            #expect(small.status == 422)
            #expect(
                (Self.limits(small)?["kyc.document"] as? [String: Any])?["detectedTypes"] as? [String] == ["image/gif"])
        }
    }
}
