/// Reads a form submission that may carry files, as it arrives: `multipart/form-data` (text
/// fields as parts, files as file parts named by their field) or JSON with each file base64 in
/// its field (``CollectJSONSplitter``). Files come out as events, in pieces; the rest is kept
/// (bounded) and read at the end as a ``CollectRequest``, with the same checks as a JSON
/// submission. Pure: the server feeds it what its body stream hands out.
public struct FormUploadReader: Sendable {
    public enum Event: Sendable, Equatable {
        /// A file of the form's field `field` (its index) begins; the name and type the client
        /// gave (hints only).
        case fileBegin(field: Int, fileName: String?, declaredType: String?)
        case fileBytes([UInt8])
        /// The file ended (a JSON file object may name it only now).
        case fileEnd(fileName: String?, declaredType: String?)
    }

    private enum Body: Sendable {
        case multipart(MultipartParser)
        case json(CollectJSONSplitter)
    }

    /// A multipart part being read.
    private enum Part: Sendable {
        case none
        case text(name: String, bytes: [UInt8])
        case file
        /// A file part with an empty `filename`: a browser's file input left empty sends one with
        /// no bytes, which is no file at all. It becomes a file only if bytes come.
        case unnamedFile(field: Int, declaredType: String?)
    }

    public let form: FormSchema
    private var body: Body
    private let maxTextBytes: Int
    /// Multipart: bytes given but not yet consumed (a boundary may straddle two pieces).
    private var held: [UInt8] = []
    private var part = Part.none
    private var textBytes = 0
    private var fields: [(key: String, value: JSONValue)] = []
    private var extraData: JSONValue?
    private var options: JSONValue?

    /// - Parameters:
    ///   - contentType: the request's; `multipart/form-data` with a boundary, or JSON.
    ///   - maxTextBytes: the most bytes everything but the files may have (the server's body limit).
    /// - Throws: 1002 for another content type.
    public init(form: FormSchema, contentType: String, maxTextBytes: Int) throws(CloakError) {
        self.form = form
        self.maxTextBytes = maxTextBytes
        let media = contentType.split(separator: ";").first.map { $0.trimmingSpaces().lowercased() } ?? ""
        if media == "multipart/form-data" {
            guard let boundary = MultipartParser.boundary(contentType: contentType) else {
                throw .malformed("multipart/form-data needs a boundary")
            }
            body = .multipart(MultipartParser(boundary: boundary))
        } else if media == "application/json" {
            let fileNames = Set(form.fields.filter { $0.type == .file }.map(\.name))
            body = .json(CollectJSONSplitter(isFileField: { fileNames.contains($0) }, maxSkeletonBytes: maxTextBytes))
        } else {
            throw .malformed("a form with files takes multipart/form-data or application/json")
        }
    }

    public var isMultipart: Bool {
        if case .multipart = body { return true }
        return false
    }

    /// Takes the body's next bytes; `emit` receives the file events they complete, in order.
    public mutating func feed(_ bytes: [UInt8], _ emit: (Event) throws(CloakError) -> Void) throws(CloakError) {
        switch body {
        case .json(var splitter):
            // Taken out of `body` while fed, so that its skeleton is changed in place, not copied.
            body = .multipart(MultipartParser(boundary: []))
            defer { body = .json(splitter) }
            var events: [CollectJSONSplitter.Event] = []
            do { try splitter.feed(bytes) { events.append($0) } } catch { throw Self.cloakError(error) }
            for event in events {
                switch event {
                case .fileBegin(let name):
                    try emit(.fileBegin(field: form.index(of: name)!, fileName: nil, declaredType: nil))
                case .fileBytes(let b): try emit(.fileBytes(b))
                case .fileEnd(let name, let type): try emit(.fileEnd(fileName: name, declaredType: type))
                }
            }
        case .multipart(var parser):
            body = .json(CollectJSONSplitter(isFileField: { _ in false }, maxSkeletonBytes: 0))
            defer { body = .multipart(parser) }
            held += bytes
            var start = 0
            while true {
                let (consumed, event) = held.withUnsafeBytes { raw in
                    parser.parse(UnsafeRawBufferPointer(rebasing: raw[start...]))
                }
                let base = start
                start += consumed
                switch event {
                case .needMore:
                    // Nothing consumed: the rest waits for more bytes (a boundary may be cut).
                    if consumed == 0 || start == held.count {
                        held.removeFirst(start)
                        return
                    }
                case .partBegun(let head):
                    try begin(head, emit)
                case .bytes(let range):
                    let slice = Array(held[(base + range.lowerBound)..<(base + range.upperBound)])
                    try partBytes(slice, emit)
                case .partEnded:
                    try endPart(emit)
                case .end:
                    continue
                case .violation(let violation):
                    throw .malformed("multipart: \(violation)")
                }
            }
        }
    }

    /// The body ended: the submission without its files (file fields read as `""`).
    public mutating func finish() throws(CloakError) -> CollectRequest {
        var document: JSONValue
        switch body {
        case .json(var splitter):
            let skeleton: [UInt8]
            do { skeleton = try splitter.finish() } catch { throw Self.cloakError(error) }
            do { document = try JSONParser().parse(skeleton) } catch {
                throw .malformed("the body is not valid JSON")
            }
        case .multipart(let parser):
            if let violation = parser.finish() { throw .malformed("multipart: \(violation)") }
            var members: [(key: String, value: JSONValue)] = [("fields", .object(fields))]
            if let extraData { members.append(("extraData", extraData)) }
            if let options { members.append(("options", options)) }
            document = .object(members)
        }
        return try CollectRequest(document, form: form)
    }

    // MARK: Multipart parts

    private mutating func begin(_ head: MultipartParser.PartHead, _ emit: (Event) throws(CloakError) -> Void)
        throws(CloakError)
    {
        let name = Redaction.scrub(head.name, limit: 64)
        if head.name == "extraData" || head.name == "options", form.index(of: head.name) == nil {
            guard head.fileName == nil else { throw .malformed("part \(name) is not a file") }
            part = .text(name: head.name, bytes: [])
            return
        }
        guard let index = form.index(of: head.name) else {
            throw .malformed("unknown field \"\(name)\" for form \(form.name)")
        }
        if form.fields[index].type == .file {
            guard let fileName = head.fileName else {
                throw .malformed("field \(name) is a file field: its part needs a filename")
            }
            if fileName.isEmpty {
                part = .unnamedFile(field: index, declaredType: head.contentType)
            } else {
                part = .file
                try emit(.fileBegin(field: index, fileName: fileName, declaredType: head.contentType))
            }
        } else {
            guard head.fileName == nil else { throw .malformed("field \(name) takes text, not a file") }
            guard !fields.contains(where: { $0.key == head.name }) else {
                throw .malformed("field \"\(name)\" appears twice")
            }
            part = .text(name: head.name, bytes: [])
        }
    }

    private mutating func partBytes(_ bytes: [UInt8], _ emit: (Event) throws(CloakError) -> Void) throws(CloakError) {
        switch part {
        case .none: return
        case .file: try emit(.fileBytes(bytes))
        case .unnamedFile(let field, let declaredType):
            guard !bytes.isEmpty else { return }
            part = .file
            try emit(.fileBegin(field: field, fileName: nil, declaredType: declaredType))
            try emit(.fileBytes(bytes))
        case .text(let name, var text):
            textBytes += bytes.count
            guard textBytes <= maxTextBytes else {
                throw CloakError(.payloadTooLarge, "the form's text parts are over \(maxTextBytes) bytes")
            }
            part = .none
            text += bytes
            part = .text(name: name, bytes: text)
        }
    }

    private mutating func endPart(_ emit: (Event) throws(CloakError) -> Void) throws(CloakError) {
        defer { part = .none }
        switch part {
        case .none, .unnamedFile: return
        case .file: try emit(.fileEnd(fileName: nil, declaredType: nil))
        case .text(let name, let bytes):
            let shown = Redaction.scrub(name, limit: 64)
            guard let text = UTF8Validation.string(bytes) else {
                throw .malformed("field \(shown) is not UTF-8")
            }
            switch name {
            case "extraData", "options":
                guard (name == "extraData" ? extraData : options) == nil else {
                    throw .malformed("part \(shown) appears twice")
                }
                guard let value = try? JSONParser().parse(bytes) else {
                    throw .malformed("part \(shown) is not valid JSON")
                }
                if name == "extraData" { extraData = value } else { options = value }
            default:
                fields.append((name, .string(text)))
            }
        }
    }

    private static func cloakError(_ failure: CollectJSONSplitter.Failure) -> CloakError {
        switch failure {
        case .malformed(let why): return .malformed(why)
        case .tooLarge: return CloakError(.payloadTooLarge, "the submission without its files is too large")
        }
    }
}
