import Foundation
import Testing

@testable import CloakCore

/// A form submission with files read as it arrives (issue 47): the same files and fields however
/// the body is cut, multipart and base64 JSON alike, and hostile bodies refused.
@Suite struct FormUploadReaderTests {
    static let form = FormSchema(
        name: "kyc",
        fields: {
            var name = FieldSchema(name: "kyc.full_name", type: .none)
            name.isRequired = false
            var document = FieldSchema(name: "kyc.document", type: .file)
            document.fileRules = FileRules(maxFiles: 2)
            return [name, document]
        }())

    struct Reading: Equatable {
        var files: [(field: Int, name: String?, bytes: [UInt8])] = []
        var values: [String?] = []
        static func == (a: Reading, b: Reading) -> Bool {
            a.values == b.values
                && a.files.elementsEqual(b.files) { $0.field == $1.field && $0.name == $1.name && $0.bytes == $1.bytes }
        }
    }

    /// Feeds `body` in pieces of `piece` bytes.
    static func read(_ body: [UInt8], contentType: String, piece: Int) throws(CloakError) -> Reading {
        var reader = try FormUploadReader(form: form, contentType: contentType, maxTextBytes: 4096)
        var reading = Reading()
        var offset = 0
        while offset < body.count {
            let end = min(offset + piece, body.count)
            try reader.feed(Array(body[offset..<end])) { (event) throws(CloakError) in
                switch event {
                case .fileBegin(let field, let name, _): reading.files.append((field, name, []))
                case .fileBytes(let bytes): reading.files[reading.files.count - 1].bytes += bytes
                case .fileEnd(let name, _):
                    if let name { reading.files[reading.files.count - 1].name = name }
                }
            }
            offset = end
        }
        reading.values = try reader.finish().values
        return reading
    }

    static let fileA: [UInt8] = (0..<70_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
    static let fileB: [UInt8] = Array("%PDF-1.7 a small document".utf8)

    @Test(arguments: [1, 2, 3, 7, 100, 4096, 1 << 20])
    func multipartReadsTheSameHoweverItIsCut(piece: Int) throws {
        var writer = MultipartWriter(boundary: "b0undary-of-the-test")!
        let body = writer.body([
            ("kyc.full_name", nil, nil, Array("Jane Doe".utf8)),
            ("kyc.document", "front.png", "image/png", Self.fileA),
            ("kyc.document", "", nil, Self.fileB),
        ])
        let reading = try Self.read(body, contentType: writer.contentType, piece: piece)
        #expect(reading.values == ["Jane Doe", nil])
        #expect(reading.files.count == 2)
        #expect(reading.files.first?.name == "front.png" && reading.files.first?.bytes == Self.fileA)
        #expect(reading.files.last?.name == nil && reading.files.last?.bytes == Self.fileB)
    }

    @Test(arguments: [1, 3, 5, 64, 1 << 20])
    func base64JSONReadsTheSameHoweverItIsCut(piece: Int) throws {
        let a = Data(Self.fileA).base64EncodedString()
        let b = Data(Self.fileB).base64EncodedString().replacingOccurrences(of: "/", with: "\\/")
        let body = """
            {"extraData":{"x":[1,{"y":"z"}]}, "fields" : {"kyc.full_name":"Jane \\"D\\"",\
            "kyc.document":[ "\(a)" , {"mediaType":"application/pdf","data":"\(b)","fileName":"b\\u00e9.pdf"} ]}}
            """
        let reading = try Self.read(Array(body.utf8), contentType: "application/json", piece: piece)
        #expect(reading.values == ["Jane \"D\"", ""])
        #expect(reading.files.map(\.bytes) == [Self.fileA, Self.fileB])
        #expect(reading.files.map(\.name) == [nil, "bé.pdf"])
    }

    @Test func aFileFieldNamedOutsideFieldsIsOrdinaryJSON() throws {
        // Only `fields` members are files: the same name in extraData is kept as it is.
        let body = #"{"extraData":{"kyc.document":"AAAA"},"fields":{"kyc.document":"AAAA"}}"#
        let reading = try Self.read(Array(body.utf8), contentType: "application/json", piece: 5)
        #expect(reading.files.map(\.bytes) == [[0, 0, 0]])
    }

    @Test(arguments: [
        #"{"fields":{"kyc.document":"AA=A"}}"#, #"{"fields":{"kyc.document":"A"}}"#,
        #"{"fields":{"kyc.document":"AA\nAA"}}"#, #"{"fields":{"kyc.document":"AA\u0041A"}}"#,
        #"{"fields":{"kyc.document":{"data":"AAAA","fileName":"a","fileName":"b"}}}"#,
        #"{"fields":{"kyc.document":{"data":"AAAA",}}}"#, #"{"fields":{"kyc.document":true}}"#,
        #"{"fields":{"kyc.document":"AAAA"}"#, #"["fields"]"#, #"{"fields":{}}}"#,
        #"{"fields":{"kyc.document":"AAAA"}} x"#,
    ])
    func hostileJSONIsRefused(body: String) {
        #expect(throws: CloakError.self) {
            _ = try Self.read(Array(body.utf8), contentType: "application/json", piece: 3)
        }
    }

    @Test func theTextBesideTheFilesIsBounded() {
        let body = #"{"fields":{"kyc.full_name":""# + String(repeating: "x", count: 5000) + #""}}"#
        #expect(throws: CloakError(.payloadTooLarge, "")) {
            _ = try Self.read(Array(body.utf8), contentType: "application/json", piece: 1000)
        }
        var writer = MultipartWriter(boundary: "bnd")!
        let parts = writer.body([("kyc.full_name", nil, nil, [UInt8](repeating: 0x41, count: 5000))])
        #expect(throws: CloakError(.payloadTooLarge, "")) {
            _ = try Self.read(parts, contentType: writer.contentType, piece: 1000)
        }
    }

    @Test func aTruncatedMultipartBodyNeverCompletes() throws {
        var writer = MultipartWriter(boundary: "bnd")!
        let body = writer.body([("kyc.document", "a.png", nil, Self.fileA)])
        for cut in [10, body.count / 2, body.count - 3] {
            #expect(throws: CloakError.self) {
                _ = try Self.read(Array(body.prefix(cut)), contentType: writer.contentType, piece: 4096)
            }
        }
    }

    @Test func otherContentTypesAreRefused() {
        for type in [
            "text/plain", "application/x-www-form-urlencoded", "multipart/form-data", "multipart/mixed; boundary=x",
        ] {
            #expect(throws: CloakError.self) {
                _ = try FormUploadReader(form: Self.form, contentType: type, maxTextBytes: 10)
            }
        }
    }
}
