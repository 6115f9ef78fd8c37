import CloakCore
import CloakTesting
import Foundation
import Testing

/// Files revealed on the way out (issue 47): a route's `reveal: {multipart: […]}` puts a file
/// alias's content as a file part, `reveal: {json: […], encoding: base64}` as base64 in JSON,
/// streamed to a real HTTPS upstream that records what it got; the caller needs `files:reveal`.
@Suite(.tags(.racy, .sockets)) struct EgressFileRevealTests {
    static let routes = """
            - id: docs
              upstream: "https://127.0.0.1:PORT"
              paths: ["/v1/*"]
              methods: [POST]
              request:
                - {reveal: {multipart: [document]}}
                - {reveal: {json: ["$.document.content"], encoding: base64}}
              ca_file: "CA"
              allow_private: true
        """

    static func fixture(scopes: String = #""egress:psp", "egress:docs", "files:reveal""#) throws -> EgressServiceFixture
    {
        try EgressServiceFixture(extraRoutes: routes, scopes: scopes)
    }

    /// Uploads `document` through the kyc form: its alias.
    static func upload(_ document: [UInt8], name: String, to f: EgressServiceFixture) throws -> String {
        let body = """
            {"fields":{"kyc.full_name":"Jane Doe","kyc.document":\
            {"data":"\(Data(document).base64EncodedString())","fileName":"\(name)"}}}
            """
        let answer = try f.server.client().request("POST", "/forms/kyc/tokens", json: body)
        guard let alias = answer.json?["kyc.document[0]"] as? String else { throw CocoaError(.coderValueNotFound) }
        return alias
    }

    static let proxy = [("Proxy-Authorization", "Bearer \(EgressFixture.egressToken)")]

    /// What the recording upstream got, as bytes (it keeps bodies as Latin-1 text).
    static func bytes(_ text: String) -> [UInt8] { text.unicodeScalars.map { UInt8(truncatingIfNeeded: $0.value) } }

    @Test func aMultipartPartBecomesTheFileStreamedUpstream() throws {
        let f = try Self.fixture()
        defer { f.stop() }
        let document = FileUploadTests.png(padding: 200_000)
        let alias = try Self.upload(document, name: "passport.png", to: f)
        var writer = MultipartWriter(boundary: "client-boundary-1234")!
        let body = writer.body([
            ("purpose", nil, nil, Array("identity".utf8)), ("document", nil, nil, Array(alias.utf8)),
            ("note", nil, nil, Array("after".utf8)),
        ])
        let r = try f.server.client().request(
            "POST", "/egress/docs/v1/checks", body: body, headers: Self.proxy + [("Content-Type", writer.contentType)])
        #expect(r.status == 200, "\(r.text.prefix(300))")
        let seen = try #require(f.upstream.received.last)
        let type = try #require(seen.header("Content-Type"))
        let boundary = try #require(MultipartParser.boundary(contentType: type))
        #expect(String(decoding: boundary, as: UTF8.self) != "client-boundary-1234")
        // The upstream's body, read back part by part.
        var parser = MultipartParser(boundary: boundary)
        let received = Self.bytes(seen.body)
        var parts: [(head: MultipartParser.PartHead, bytes: [UInt8])] = []
        var offset = 0
        while offset <= received.count {
            let (consumed, event) = received.withUnsafeBytes {
                parser.parse(UnsafeRawBufferPointer(rebasing: $0[offset...]))
            }
            let base = offset
            offset += consumed
            if case .partBegun(let head) = event { parts.append((head, [])) }
            if case .bytes(let range) = event {
                parts[parts.count - 1].bytes += received[(base + range.lowerBound)..<(base + range.upperBound)]
            }
            if case .needMore = event, consumed == 0 { break }
            if case .violation = event { break }
        }
        #expect(parser.finish() == nil)
        #expect(parts.map(\.head.name) == ["purpose", "document", "note"])
        #expect(parts[1].head.fileName == "passport.png" && parts[1].head.contentType == "image/png")
        #expect(parts[1].bytes == document)
        #expect(parts[0].bytes == Array("identity".utf8) && parts[2].bytes == Array("after".utf8))
        #expect(!f.server.logs.text.contains("passport.png"))
        // The reveal is audited by the alias's keyed reference, with its route.
        let audit = try #require(f.server.logs.lines.first { $0.contains(#""action":"file_reveal""#) })
        #expect(audit.contains(#""route":"docs""#) && audit.contains(#""alias_ref":"ar_"#) && !audit.contains(alias))
    }

    @Test func aJSONStringBecomesTheFileInBase64() throws {
        let f = try Self.fixture()
        defer { f.stop() }
        // 100 001 bytes: the base64 ends with padding, carried across chunks.
        let document = FileUploadTests.png(padding: 100_001 - FileUploadTests.png().count)
        let alias = try Self.upload(document, name: "id.png", to: f)
        let r = try f.server.client().request(
            "POST", "/egress/docs/v1/checks", json: #"{"document":{"content":"\#(alias)","kind":"passport"}}"#,
            headers: Self.proxy)
        #expect(r.status == 200)
        let seen = try #require(f.upstream.received.last)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(seen.body.utf8)) as? [String: Any])
        let sent = try #require((json["document"] as? [String: Any])?["content"] as? String)
        #expect(Data(base64Encoded: sent).map { [UInt8]($0) } == document)
        #expect((json["document"] as? [String: Any])?["kind"] as? String == "passport")
    }

    @Test func revealingAFileNeedsFilesRevealAndAFilesAlias() throws {
        let f = try Self.fixture(scopes: #""egress:docs""#)
        defer { f.stop() }
        let alias = try Self.upload(FileUploadTests.png(), name: "a.png", to: f)
        let refused = try f.server.client().request(
            "POST", "/egress/docs/v1/checks", json: #"{"document":{"content":"\#(alias)"}}"#, headers: Self.proxy)
        #expect(refused.status == 403)
        #expect(f.upstream.received.isEmpty)

        let g = try Self.fixture()
        defer { g.stop() }
        let value = try g.alias()
        let notAFile = try g.server.client().request(
            "POST", "/egress/docs/v1/checks", json: #"{"document":{"content":"\#(value)"}}"#, headers: Self.proxy)
        #expect(notAFile.status == 404, "\(notAFile.text)")
        #expect(g.upstream.received.isEmpty)
    }
}

/// A file streamed into a request whose upstream reads slowly (a 4 KiB receive buffer): every
/// byte arrives once, in order; and a file cut in the store is never sent as a whole request.
@Suite(.serialized, .tags(.racy, .sockets)) struct StreamedRevealTests {
    static func yaml(_ upstream: Int) -> String {
        TestServer.configurationWithTokens.replacingOccurrences(
            of: "routes: []",
            with: """
                routes:
                  - {id: "7d3c1c9e-0a55-4a4b-9b8e-2f0c6a1d3e11", path: /raw, upstream: "http://127.0.0.1:\(upstream)/raw",
                     methods: [POST], request: [{reveal: {json: ["$.doc"], encoding: base64}}]}

                """)
    }

    static let files = [("Authorization", "Bearer \(TestServer.filesToken)")]

    static func upload(_ document: [UInt8], to server: TestServer) throws -> String {
        let answer = try FileUploadTests.upload(
            try server.client(),
            FileUploadTests.multipart([("kyc.full_name", nil, Array("J D".utf8)), ("kyc.document", "d.png", document)]))
        guard let alias = answer.json?["kyc.document[0]"] as? String else { throw CocoaError(.coderValueNotFound) }
        return alias
    }

    @Test func aSlowUpstreamGetsTheWholeFileOnce() throws {
        let upstream = RawUpstream(receiveBuffer: 4096)
        defer { upstream.stop() }
        try withTestServer(TestServer(yaml: Self.yaml(upstream.port))) { server throws in
            let document = FileUploadTests.png(padding: 3 << 20)
            let alias = try Self.upload(document, to: server)
            let r = try server.client(timeout: 30).request(
                "POST", "/proxy/raw", body: Array(#"{"doc":"\#(alias)"}"#.utf8),
                headers: Self.files + [("Content-Type", "application/json")])
            #expect(r.status == 204, "\(r.status) \(r.text)")
            let seen = upstream.bytes
            let head = try #require(seen.firstRange(of: Array("\r\n\r\n".utf8)))
            let body = Array(seen[head.upperBound...])
            let expected =
                Array(#"{"doc":""#.utf8) + Array(Data(document).base64EncodedString().utf8) + Array(#""}"#.utf8)
            #expect(
                String(decoding: seen[..<head.lowerBound], as: UTF8.self).contains("Content-Length: \(expected.count)"))
            #expect(body == expected)
        }
    }

    @Test func aFileCutInTheStoreIsNeverSentWhole() throws {
        let upstream = RawUpstream()
        defer { upstream.stop() }
        try withTestServer(TestServer(yaml: Self.yaml(upstream.port))) { server throws in
            let alias = try Self.upload(FileUploadTests.png(padding: 500_000), to: server)
            try FileUploadTests.sqlite(server, "DELETE FROM file_chunks WHERE idx = 3")
            let r = try server.client(timeout: 30).request(
                "POST", "/proxy/raw", body: Array(#"{"doc":"\#(alias)"}"#.utf8),
                headers: Self.files + [("Content-Type", "application/json")])
            #expect(r.status >= 500, "\(r.status) \(r.text)")
            // The upstream saw a head promising more than it got, then the connection's end.
            #expect(Poll.until { upstream.text.contains("Content-Length") })
            let seen = upstream.bytes
            let head = try #require(seen.firstRange(of: Array("\r\n\r\n".utf8)))
            let text = String(decoding: seen[..<head.lowerBound], as: UTF8.self)
            let promised = text.split(separator: "\r\n").first { $0.hasPrefix("Content-Length: ") }.flatMap {
                Int($0.dropFirst(16))
            }
            #expect((promised ?? 0) > seen.count - head.upperBound)
        }
    }
}

/// A route's `digest` step (issue 49): the SHA-256 of the body as it goes upstream, after reveal,
/// checked by Python's hashlib on what the upstream received.
@Suite(.tags(.sockets)) struct RouteDigestStepTests {
    @Test(arguments: ["Content-Digest", "Digest"])
    func theDigestIsOfTheRevealedBody(header: String) throws {
        let route = """
                - id: signed
                  upstream: "https://127.0.0.1:PORT"
                  paths: ["/v1/*"]
                  methods: [POST]
                  request:
                    - {reveal: {json: ["$.card"]}}
                    - {digest: {header: \(header)}}
                  ca_file: "CA"
                  allow_private: true
            """
        let f = try EgressServiceFixture(extraRoutes: route, scopes: #""egress:signed""#)
        defer { f.stop() }
        let alias = try f.alias()
        let r = try f.server.client().request(
            "POST", "/egress/signed/v1/pay", json: #"{"card":"\#(alias)"}"#,
            headers: EgressFileRevealTests.proxy + [(header, "sha-256=:forged:")])
        // The recording upstream echoes the body: its answer holds the revealed card, which the
        // caller (no aliases:reveal) never gets (502). What matters here is what went upstream.
        #expect(r.status == 502)
        let seen = try #require(f.upstream.received.last)
        #expect(seen.body.contains(EgressFixture.card))
        let sent = try #require(seen.header(header))
        let python = try EgressFixture.run(
            "python3",
            [
                "-c",
                "import hashlib,base64,sys; print(base64.b64encode(hashlib.sha256(sys.argv[1].encode('latin-1')).digest()).decode())",
                seen.body,
            ])
        let expected = python.out.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(sent == (header == "Digest" ? "SHA-256=\(expected)" : "sha-256=:\(expected):"), "\(sent)")
    }
}
