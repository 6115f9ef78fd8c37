import CloakCollect
import CloakCore
import CloakTesting
import Foundation
import Testing

/// Issue 47: CloakCollect's file field. Its state is CloakCore's `FileFieldState` under the
/// field's rules from the served schema (the test forms' `kyc.document`: PNG or PDF, at most
/// 1 MiB a file, at most two files); a form holding files is sent as `multipart/form-data`
/// with `Cloak-Upload: 1`; nothing prints a file's bytes or its name.
@Suite(.serialized, .tags(.sockets)) struct FileFieldTests {
    /// A 1×1 PNG.
    static let png = Data(
        base64Encoded: "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC")!
    static let pdf = Data("%PDF-1.4\n1 0 obj\n<< /Type /Catalog >>\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n".utf8)
    /// An ELF header: an executable, whatever the field allows.
    static let elf = Data([0x7F, 0x45, 0x4C, 0x46, 0x02, 0x01, 0x01, 0x00] + [UInt8](repeating: 0, count: 56))
    /// The rules the test form gives `kyc.document`.
    static let rules = FileRules(maxBytes: 1 << 20, types: [.png, .pdf], maxFiles: 2, isRequired: false)

    /// A collector of the test form `documents`, its schema served by a recording stub.
    static func collect() async throws -> (CloakCollect, SchemaStub) {
        let stub = try SchemaStub(yaml: LiveServer.stubConfiguration)
        let collect = CloakCollect(server: URL(string: "https://cloak.example")!, form: "documents", transport: stub)
        try await collect.loadSchema()
        return (collect, stub)
    }

    /// CloakCore's state for `files` under the test form's rules: what the server computes.
    static func expected(_ files: [Data]) -> FileFieldState {
        FileFieldState(
            files: files.map { data in
                var inspection = FileInspection()
                inspection.feed(data)
                return inspection
            }, rules: rules)
    }

    static func matches(_ state: CloakFileFieldState, _ core: FileFieldState) -> Bool {
        state.isValid == core.isValid && state.isEmpty == core.isEmpty
            && state.validationErrors == core.validationErrors && state.fileCount == core.fileCount
            && state.bytes == core.bytes && state.mediaType == core.mediaType?.rawValue
    }

    // MARK: State

    @Test func theFieldTakesItsRulesFromTheSchema() async throws {
        let (collect, _) = try await Self.collect()
        let document = try collect.fileField("kyc.document")
        #expect(document.configuration.allowedMediaTypes == ["image/png", "application/pdf"])
        #expect(document.configuration.maxBytes == 1_048_576 && document.configuration.maxFiles == 2)
        #expect(!document.configuration.isRequired)
        #expect(try collect.fileField("kyc.document") === document)
        // Empty and not required: valid.
        #expect(document.state == CloakFileFieldState(isValid: true, isEmpty: true))
        #expect(collect.state.isValid && collect.state.files["kyc.document"] == document.state)
        #expect(collect.state.fields["kyc.document"] == nil && collect.state.fields["kyc.full_name"] != nil)
    }

    @Test func aPNGIsValid() async throws {
        let (collect, _) = try await Self.collect()
        let document = try collect.fileField("kyc.document")
        document.add(data: Self.png, fileName: "id.png", mediaType: "image/png")
        let state = document.state
        #expect(state.isValid && !state.isEmpty && state.validationErrors.isEmpty)
        #expect(state.fileCount == 1 && state.bytes == Self.png.count && state.mediaType == "image/png")
        #expect(Self.matches(state, Self.expected([Self.png])))
        let file = try #require(document.files.first)
        #expect(document.files.count == 1 && file.fileName == "id.png" && file.size == Self.png.count)
        #expect(file.declaredMediaType == "image/png" && file.mediaType == "image/png")
        #expect(collect.state.isValid && collect.state.files["kyc.document"] == state)
        // A PDF beside it: two files, the first one's type.
        document.add(data: Self.pdf, fileName: "back.pdf", mediaType: nil)
        #expect(document.state.isValid && document.state.fileCount == 2 && document.state.mediaType == "image/png")
        #expect(document.state.bytes == Self.png.count + Self.pdf.count)
        #expect(document.files.map(\.mediaType) == ["image/png", "application/pdf"])
        #expect(Self.matches(document.state, Self.expected([Self.png, Self.pdf])))
    }

    @Test func anEmptyFileIsRefused() async throws {
        let (collect, _) = try await Self.collect()
        let document = try collect.fileField("kyc.document")
        document.add(data: Data(), fileName: "empty.png", mediaType: "image/png")
        #expect(document.state.validationErrors == [FileValidationError.empty])
        #expect(!document.state.isValid && !document.state.isEmpty && document.state.fileCount == 1)
        #expect(document.state.bytes == 0 && document.state.mediaType == nil)
        #expect(Self.matches(document.state, Self.expected([Data()])))
        #expect(!collect.state.isValid)
    }

    @Test func anExecutableIsRefusedWhateverItDeclares() async throws {
        let (collect, _) = try await Self.collect()
        let document = try collect.fileField("kyc.document")
        document.add(data: Self.elf, fileName: "id.png", mediaType: "image/png")
        #expect(document.state.validationErrors == [FileValidationError.executable])
        #expect(!document.state.isValid && document.state.mediaType == nil)
        #expect(document.files.first?.declaredMediaType == "image/png" && document.files.first?.mediaType == nil)
        #expect(Self.matches(document.state, Self.expected([Self.elf])))
        #expect(!collect.state.isValid)
    }

    @Test func aTypeTheFieldDoesNotAllowAndAFileTooLargeAreRefused() async throws {
        let (collect, _) = try await Self.collect()
        let document = try collect.fileField("kyc.document")
        let gif = Data(Array("GIF89a".utf8) + [UInt8](repeating: 0, count: 20))
        document.add(data: gif, fileName: "a.gif", mediaType: "image/gif")
        #expect(document.state.validationErrors == [FileValidationError.typeNotAllowed])
        #expect(document.state.mediaType == "image/gif")
        document.clear()
        let large = Self.png + Data(count: 1 << 20)
        document.add(data: large, fileName: "large.png", mediaType: "image/png")
        #expect(document.state.validationErrors == [FileValidationError.tooLarge])
        #expect(Self.matches(document.state, Self.expected([large])))
    }

    @Test func tooManyFilesAndRemovingOne() async throws {
        let (collect, _) = try await Self.collect()
        let document = try collect.fileField("kyc.document")
        for name in ["a.png", "b.png", "c.png"] { document.add(data: Self.png, fileName: name, mediaType: "image/png") }
        #expect(document.state.validationErrors == [FileValidationError.tooManyFiles])
        #expect(document.state.fileCount == 3 && !collect.state.isValid)
        #expect(Self.matches(document.state, Self.expected([Self.png, Self.png, Self.png])))
        document.remove(at: 1)
        #expect(document.files.map(\.fileName) == ["a.png", "c.png"])
        #expect(document.state.isValid && document.state.fileCount == 2 && collect.state.isValid)
        // A position the field does not have changes nothing.
        document.remove(at: 2)
        document.remove(at: -1)
        #expect(document.files.count == 2)
        // Each file's errors, in file order, then the field's.
        document.add(data: Self.elf, fileName: "d.png", mediaType: nil)
        document.add(data: Data(), fileName: "e.png", mediaType: nil)
        #expect(
            document.state.validationErrors == [
                FileValidationError.executable, FileValidationError.empty, FileValidationError.tooManyFiles,
            ])
        document.remove(at: 0)
        document.remove(at: 0)
        document.remove(at: 1)
        #expect(document.files.map(\.fileName) == ["d.png"])
        #expect(document.state.validationErrors == [FileValidationError.executable])
        collect.clearAll()
        #expect(document.files.isEmpty && document.state == CloakFileFieldState(isValid: true, isEmpty: true))
    }

    @Test func observersHearEveryChange() async throws {
        let (collect, _) = try await Self.collect()
        let document = try collect.fileField("kyc.document")
        let heard = Recorded<Int>()
        document.onChange = { field in heard.append(field.state.fileCount) }
        document.add(data: Self.png, fileName: "a.png", mediaType: "image/png")
        document.add(data: Self.pdf, fileName: "b.pdf", mediaType: "application/pdf")
        document.remove(at: 0)
        document.clear()
        #expect(heard.all == [1, 2, 1, 0])
        #expect(document.onChange != nil)
    }

    @Test func fieldsOfTheOtherKindAreRefused() async throws {
        let unloaded = CloakCollect(server: URL(string: "https://cloak.example")!, form: "documents")
        let early = #expect(throws: CloakCollectError.self) { try unloaded.fileField("kyc.document") }
        #expect(early?.code == "schema_not_loaded")
        let (collect, _) = try await Self.collect()
        let text = #expect(throws: CloakCollectError.self) { try collect.field("kyc.document") }
        #expect(text?.code == "not_a_text_field")
        let file = #expect(throws: CloakCollectError.self) { try collect.fileField("kyc.full_name") }
        #expect(file?.code == "not_a_file_field")
        let unknown = #expect(throws: CloakCollectError.self) { try collect.fileField("kyc.selfie") }
        #expect(unknown?.code == "unknown_field")
    }

    // MARK: Redaction

    @Test func nothingPrintsAFilesBytesOrName() async throws {
        let (collect, stub) = try await Self.collect()
        let document = try collect.fileField("kyc.document")
        let name = "passport-jane-doe.png"
        let marker = "JANE-DOE-PASSPORT-CONTENT"
        let content = Self.png + Data(marker.utf8)
        document.add(data: content, fileName: name, mediaType: "image/png")
        // The submission carries them (to Cloak: the stub) ...
        _ = try await collect.submit(.tokens)
        let sent = String(decoding: stub.requests.last?.body ?? Data(), as: UTF8.self)
        #expect(sent.contains(marker) && sent.contains(name))
        // ... and nothing else shows them.
        var errors: [Any] = []
        do { _ = try collect.field("kyc.document") } catch { errors.append(error) }
        let printed: [Any] = [
            collect, document, document.files, document.files[0], document.state, document.configuration, collect.state,
        ]
        let text = RedactionTests.printed(printed + errors)
        #expect(!text.contains(name) && !text.contains("jane") && !text.contains(marker))
        #expect(!text.contains(content.base64EncodedString()))
        #expect(text.contains("kyc.document"))
    }

    // MARK: Submitting

    @Test func aFormWithFilesIsSentAsMultipart() async throws {
        let (collect, stub) = try await Self.collect()
        try collect.field("kyc.full_name").replace(0..<0, with: "Jane Doe")
        let document = try collect.fileField("kyc.document")
        document.add(data: Self.png, fileName: "id \"front\".png", mediaType: "image/png")
        document.add(data: Self.pdf, fileName: "back.pdf", mediaType: nil)
        let reports = Recorded<CloakUploadProgress>()
        _ = try await collect.submit(
            .tokens, extraData: ["order": "A-1"], mappingPolicy: .flatJSON, progress: { reports.append($0) })
        let request = try #require(stub.requests.last)
        #expect(request.method == "POST" && request.url.path == "/forms/documents/tokens")
        #expect(request.headers["Cloak-Upload"] == "1")
        let contentType = try #require(request.headers["Content-Type"])
        #expect(contentType.hasPrefix("multipart/form-data; boundary="))
        let boundary = try #require(MultipartParser.boundary(contentType: contentType))
        let body = try #require(request.body)
        let parts = Self.parts(body, boundary: boundary)
        let names = parts.map { $0.head.name }
        #expect(names == ["kyc.full_name", "kyc.document", "kyc.document", "extraData", "options"])
        guard parts.count == 5 else { return }
        #expect(parts[0].head.fileName == nil && parts[0].head.contentType == nil)
        #expect(parts[0].bytes == Array("Jane Doe".utf8))
        // Quotes in a file name are percent-encoded, as browsers send them.
        #expect(parts[1].head.fileName == "id %22front%22.png" && parts[1].head.contentType == "image/png")
        #expect(parts[1].bytes == Array(Self.png))
        // No declared type: the content's.
        #expect(parts[2].head.fileName == "back.pdf" && parts[2].head.contentType == "application/pdf")
        #expect(parts[2].bytes == Array(Self.pdf))
        #expect(parts[3].head.contentType == "application/json" && parts[4].head.contentType == "application/json")
        let extra = try JSONSerialization.jsonObject(with: Data(parts[3].bytes)) as? [String: String]
        #expect(extra == ["order": "A-1"])
        let options = try JSONSerialization.jsonObject(with: Data(parts[4].bytes)) as? [String: String]
        #expect(options == ["fieldNameMappingPolicy": "flatJSON"])
        // A transport without progress of its own reports once, at the end.
        let total = Int64(body.count)
        #expect(reports.all == [CloakUploadProgress(bytesSent: total, totalBytes: total)])
        #expect(reports.all.last?.fractionCompleted == 1)
    }

    @Test func aFormWithoutFilesIsSentAsJSONAsBefore() async throws {
        let (collect, stub) = try await Self.collect()
        try collect.field("kyc.full_name").replace(0..<0, with: "Jane Doe")
        let document = try collect.fileField("kyc.document")
        document.add(data: Self.png, fileName: "id.png", mediaType: "image/png")
        document.remove(at: 0)
        _ = try await collect.submit(.tokens)
        let request = try #require(stub.requests.last)
        #expect(request.headers["Content-Type"] == "application/json" && request.headers["Cloak-Upload"] == nil)
        let json = try JSONSerialization.jsonObject(with: request.body ?? Data()) as? [String: [String: String]]
        #expect(json == ["fields": ["kyc.full_name": "Jane Doe"]])
    }

    /// The parts of a multipart body, read back by CloakCore's parser (the server's).
    static func parts(_ body: Data, boundary: [UInt8]) -> [(head: MultipartParser.PartHead, bytes: [UInt8])] {
        var parser = MultipartParser(boundary: boundary)
        var parts: [(head: MultipartParser.PartHead, bytes: [UInt8])] = []
        var rest = Array(body)
        while !rest.isEmpty {
            let (consumed, event) = rest.withUnsafeBytes { parser.parse($0) }
            let given = rest
            rest.removeFirst(consumed)
            switch event {
            case .partBegun(let head): parts.append((head: head, bytes: []))
            case .bytes(let range): parts[parts.count - 1].bytes += given[range]
            case .violation(let violation):
                Issue.record("\(violation)")
                return parts
            case .needMore where consumed == 0:
                Issue.record("the body ends before its closing boundary")
                return parts
            default: break
            }
        }
        #expect(parser.finish() == nil)
        return parts
    }

    // MARK: End to end

    /// Against the real server: a PNG uploads and gets a UUID alias; two files get one each; an
    /// executable is refused with 1001 and the client's own errors.
    @Test func aPNGUploadsAndGetsAUUIDAlias() async throws {
        try await withTestServer(LiveServer.start()) { server in
            let collect = CloakCollect(server: LiveServer.url(server), form: "documents")
            try await collect.loadSchema()
            try collect.field("kyc.full_name").replace(0..<0, with: "Jane Doe")
            let document = try collect.fileField("kyc.document")
            #expect(document.configuration.allowedMediaTypes == ["image/png", "application/pdf"])
            document.add(data: Self.png, fileName: "id.png", mediaType: "image/png")
            #expect(collect.state.isValid)
            let reports = Recorded<CloakUploadProgress>()
            let answer = try await collect.submit(.tokens, progress: { reports.append($0) })
            #expect(answer.status == 200, "\(answer.status): \(String(decoding: answer.body, as: UTF8.self))")
            let aliases = try #require(answer.json as? [String: Any])
            // A field that may hold several files answers by position, however many were sent.
            let alias = try #require(aliases["kyc.document[0]"] as? String)
            #expect(alias.hasPrefix("tok_sandbox_"), "\(alias)")
            #expect(aliases["kyc.full_name"] is String)
            // URLSession's progress: the last report has the whole body.
            let last = try #require(reports.all.last)
            #expect(last.totalBytes > Int64(Self.png.count) && last.bytesSent == last.totalBytes)
            #expect(zip(reports.all, reports.all.dropFirst()).allSatisfy { $0.bytesSent <= $1.bytesSent })

            // Two files: one alias each, by position.
            document.add(data: Self.pdf, fileName: "back.pdf", mediaType: "application/pdf")
            let two = try await collect.submit(.tokens)
            #expect(two.status == 200, "\(two.status): \(String(decoding: two.body, as: UTF8.self))")
            let both = try #require(two.json as? [String: Any])
            #expect(both["kyc.document[0]"] is String && both["kyc.document[1]"] is String)

            // An executable: refused by the server as by the client.
            document.clear()
            document.add(data: Self.elf, fileName: "id.png", mediaType: "image/png")
            #expect(!collect.state.isValid && document.state.validationErrors == [FileValidationError.executable])
            let refused = try await collect.submit(.tokens)
            let text = String(decoding: refused.body, as: UTF8.self)
            #expect(refused.status == 422 && refused.errorCode == 1001, "\(refused.status): \(text)")
            #expect(text.contains(FileValidationError.executable))
            #expect(!server.logs.text.contains("Jane Doe"))
        }
    }
}

/// What a `@Sendable` closure was called with, in order.
final class Recorded<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var values: [Value] = []

    func append(_ value: Value) { lock.withLock { values.append(value) } }

    var all: [Value] { lock.withLock { values } }
}
