/// Splits a JSON collect submission that carries files (`{"fields": {"kyc.document": "<base64>"}}`,
/// the VGS SDK's `sendFile`) as it arrives: each file value under `fields` is decoded from base64
/// and handed out in pieces, never held whole, and what remains (the submission's *skeleton*,
/// with every file value replaced by `""`) is kept for ``CollectRequest`` to read as usual.
///
/// A file value is the base64 text itself, an object `{"data": "<base64>", "fileName": …,
/// "mediaType": …}`, or an array of either (a field holding several files). Pure and
/// incremental, like the request parser: ``feed(_:_:)`` takes bytes in any pieces.
///
/// The splitter only finds the file values; the skeleton is checked by the JSON parser after.
/// Inside a file value it is strict: base64 in the standard alphabet (a JSON `\/` escape is
/// taken as `/`, any other escape is refused), the three members only, each once.
public struct CollectJSONSplitter: Sendable {
    public enum Event: Sendable, Equatable {
        /// A file of field `field` begins.
        case fileBegin(field: String)
        /// Its next decoded bytes.
        case fileBytes([UInt8])
        /// It ended; the names its object gave, if any.
        case fileEnd(fileName: String?, mediaType: String?)
    }

    public enum Failure: Error, Sendable, Equatable {
        /// The body breaks JSON, or a file value is not one of the shapes above (the message
        /// names no value).
        case malformed(String)
        /// The skeleton (everything but the files) grew past its limit.
        case tooLarge
    }

    private enum Container: Sendable {
        /// An object: the key last read (nil: none yet, or too long to matter), and whether a
        /// key is expected next.
        case object(key: String?, expectingKey: Bool)
        case array
    }

    /// Where a file value is being read.
    private enum FileState: Sendable {
        /// Not in a file value.
        case none
        /// Before a file (a value of the field, or of its array).
        case valueStart(inArray: Bool)
        /// In a file's base64 string (directly, or as an object's `data`).
        case base64(inObject: Bool, inArray: Bool, escaped: Bool)
        /// In a file object, between members.
        case object(inArray: Bool, expecting: ObjectExpectation)
        /// In a short string member of a file object (`fileName`, `mediaType`).
        case member(name: String, inArray: Bool, text: [UInt8], escaped: Bool)
        /// In an array of files, after one.
        case afterArrayItem
    }

    private enum ObjectExpectation: Sendable {
        case keyOrEnd, key, colon(String), value(String), commaOrEnd
    }

    private let isFileField: @Sendable (String) -> Bool
    private let maxSkeletonBytes: Int
    public private(set) var skeleton: [UInt8] = []
    private var stack: [Container] = []
    private var inString = false
    private var escaped = false
    private var stringStart = 0
    private var file = FileState.none
    private var field = ""
    private var decoder = Base64Stream()
    private var decoded: [UInt8] = []
    private var fileName: String?
    private var mediaType: String?
    private var hasData = false
    private var ended = false

    /// - Parameters:
    ///   - isFileField: whether a name under `fields` is a file field.
    ///   - maxSkeletonBytes: the most bytes the rest of the submission may have.
    public init(isFileField: @escaping @Sendable (String) -> Bool, maxSkeletonBytes: Int) {
        self.isFileField = isFileField
        self.maxSkeletonBytes = maxSkeletonBytes
    }

    /// Takes the next bytes of the body; `emit` receives file events in order.
    public mutating func feed(_ bytes: [UInt8], _ emit: (Event) throws(Failure) -> Void) throws(Failure) {
        var i = 0
        while i < bytes.count {
            if case .base64(_, _, false) = file {
                // A run of base64 is decoded at once, up to a quote or an escape.
                var end = i
                while end < bytes.count && bytes[end] != UInt8(ascii: "\"") && bytes[end] != UInt8(ascii: "\\") {
                    end += 1
                }
                if end > i {
                    do { try decoder.feed(bytes[i..<end], into: &decoded) } catch {
                        throw .malformed("field \(field): the file's base64 is not valid")
                    }
                    i = end
                    continue
                }
            }
            if case .none = file {
                try skeletonByte(bytes[i], emit)
            } else {
                try fileByte(bytes[i], emit)
            }
            i += 1
        }
        if !decoded.isEmpty {
            try emit(.fileBytes(decoded))
            decoded.removeAll(keepingCapacity: true)
        }
        guard skeleton.count <= maxSkeletonBytes else { throw .tooLarge }
    }

    /// The body ended: the skeleton, to be read as a submission.
    public mutating func finish() throws(Failure) -> [UInt8] {
        guard case .none = file, stack.isEmpty, !inString, ended else {
            throw .malformed("the body ends inside a JSON value")
        }
        return skeleton
    }

    // MARK: Outside files

    private static func isSpace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D }

    private mutating func skeletonByte(_ b: UInt8, _ emit: (Event) throws(Failure) -> Void) throws(Failure) {
        if inString {
            skeleton.append(b)
            if escaped {
                escaped = false
            } else if b == UInt8(ascii: "\\") {
                escaped = true
            } else if b == UInt8(ascii: "\"") {
                inString = false
                if case .object(_, true)? = stack.last {
                    // A key: kept when short (keys that matter are field names and `fields`).
                    let raw = skeleton[(stringStart)..<skeleton.count]
                    var key: String?
                    if raw.count <= 1026, let parsed = try? JSONParser().parse(Array(raw)), case .string(let s) = parsed
                    {
                        key = s
                    }
                    stack[stack.count - 1] = .object(key: key, expectingKey: false)
                }
            }
            return
        }
        if Self.isSpace(b) { return skeleton.append(b) }
        guard !ended else { throw .malformed("data after the JSON value") }
        switch b {
        case UInt8(ascii: ":"):
            guard case .object(let key, false)? = stack.last else { throw .malformed("a misplaced ':'") }
            skeleton.append(b)
            if stack.count == 2, case .object(key: "fields", _) = stack[0], let key, isFileField(key) {
                field = key
                file = .valueStart(inArray: false)
            }
        case UInt8(ascii: ","):
            skeleton.append(b)
            if case .object(_, false)? = stack.last { stack[stack.count - 1] = .object(key: nil, expectingKey: true) }
        case UInt8(ascii: "{"):
            skeleton.append(b)
            stack.append(.object(key: nil, expectingKey: true))
        case UInt8(ascii: "["):
            skeleton.append(b)
            stack.append(.array)
        case UInt8(ascii: "}"), UInt8(ascii: "]"):
            guard !stack.isEmpty else { throw .malformed("a misplaced '\(Character(Unicode.Scalar(b)))'") }
            skeleton.append(b)
            stack.removeLast()
            if stack.isEmpty { ended = true }
        case UInt8(ascii: "\""):
            stringStart = skeleton.count
            skeleton.append(b)
            inString = true
        default:
            guard !stack.isEmpty else { throw .malformed("the body is not a JSON object") }
            skeleton.append(b)
        }
    }

    // MARK: In a file value

    private mutating func fileByte(_ b: UInt8, _ emit: (Event) throws(Failure) -> Void) throws(Failure) {
        switch file {
        case .none:
            return
        case .valueStart(let inArray):
            if Self.isSpace(b) { return }
            switch b {
            case UInt8(ascii: "\""):
                try begin(emit)
                file = .base64(inObject: false, inArray: inArray, escaped: false)
            case UInt8(ascii: "{"):
                try begin(emit)
                file = .object(inArray: inArray, expecting: .keyOrEnd)
            case UInt8(ascii: "[") where !inArray:
                file = .valueStart(inArray: true)
            case UInt8(ascii: "]") where inArray:
                return endValue()
            default:
                throw .malformed("field \(field): a file is base64 text or {\"data\": …}")
            }
        case .base64(let inObject, let inArray, let escaped):
            if escaped {
                guard b == UInt8(ascii: "/") else { throw .malformed("field \(field): the file's base64 is not valid") }
                try decode(b)
                file = .base64(inObject: inObject, inArray: inArray, escaped: false)
            } else if b == UInt8(ascii: "\\") {
                file = .base64(inObject: inObject, inArray: inArray, escaped: true)
            } else if b == UInt8(ascii: "\"") {
                do { try decoder.finish() } catch {
                    throw .malformed("field \(field): the file's base64 is not valid")
                }
                if inObject {
                    hasData = true
                    file = .object(inArray: inArray, expecting: .commaOrEnd)
                } else {
                    try end(inArray: inArray, emit)
                }
            } else {
                try decode(b)
            }
        case .object(let inArray, let expecting):
            if Self.isSpace(b) { return }
            switch (expecting, b) {
            case (.keyOrEnd, UInt8(ascii: "}")), (.commaOrEnd, UInt8(ascii: "}")):
                guard hasData else { throw .malformed("field \(field): a file object needs \"data\"") }
                try end(inArray: inArray, emit)
            case (.keyOrEnd, UInt8(ascii: "\"")), (.key, UInt8(ascii: "\"")):
                file = .member(name: "", inArray: inArray, text: [], escaped: false)
            case (.colon(let key), UInt8(ascii: ":")):
                file = .object(inArray: inArray, expecting: .value(key))
            case (.value(let key), UInt8(ascii: "\"")):
                if key == "data" {
                    guard !hasData else { throw .malformed("field \(field): \"data\" appears twice") }
                    file = .base64(inObject: true, inArray: inArray, escaped: false)
                } else {
                    file = .member(name: key, inArray: inArray, text: [], escaped: false)
                }
            case (.commaOrEnd, UInt8(ascii: ",")):
                file = .object(inArray: inArray, expecting: .key)
            default:
                throw .malformed("field \(field): a file object is {\"data\", \"fileName\", \"mediaType\"} strings")
            }
        case .member(let name, let inArray, var text, let escaped):
            guard text.count <= 1024 else { throw .malformed("field \(field): a file's name or type is too long") }
            if !escaped && b == UInt8(ascii: "\"") {
                guard let parsed = try? JSONParser().parse([UInt8(ascii: "\"")] + text + [UInt8(ascii: "\"")]),
                    case .string(let value) = parsed
                else { throw .malformed("field \(field): a file object's string is not valid JSON") }
                switch name {
                case "":
                    guard ["data", "fileName", "mediaType"].contains(value) else {
                        throw .malformed(
                            "field \(field): a file object is {\"data\", \"fileName\", \"mediaType\"} strings")
                    }
                    file = .object(inArray: inArray, expecting: .colon(value))
                case "fileName":
                    guard fileName == nil else { throw .malformed("field \(field): \"fileName\" appears twice") }
                    fileName = value
                    file = .object(inArray: inArray, expecting: .commaOrEnd)
                default:
                    guard mediaType == nil else { throw .malformed("field \(field): \"mediaType\" appears twice") }
                    mediaType = value
                    file = .object(inArray: inArray, expecting: .commaOrEnd)
                }
                return
            }
            text.append(b)
            file = .member(name: name, inArray: inArray, text: text, escaped: !escaped && b == UInt8(ascii: "\\"))
        case .afterArrayItem:
            if Self.isSpace(b) { return }
            switch b {
            case UInt8(ascii: ","): file = .valueStart(inArray: true)
            case UInt8(ascii: "]"): endValue()
            default: throw .malformed("field \(field): a list of files is a JSON array")
            }
        }
    }

    private mutating func decode(_ b: UInt8) throws(Failure) {
        do { try decoder.feed(CollectionOfOne(b), into: &decoded) } catch {
            throw .malformed("field \(field): the file's base64 is not valid")
        }
    }

    private mutating func begin(_ emit: (Event) throws(Failure) -> Void) throws(Failure) {
        decoder = Base64Stream()
        fileName = nil
        mediaType = nil
        hasData = false
        try emit(.fileBegin(field: field))
    }

    private mutating func end(inArray: Bool, _ emit: (Event) throws(Failure) -> Void) throws(Failure) {
        if !decoded.isEmpty {
            try emit(.fileBytes(decoded))
            decoded.removeAll(keepingCapacity: true)
        }
        try emit(.fileEnd(fileName: fileName, mediaType: mediaType))
        if inArray { file = .afterArrayItem } else { endValue() }
    }

    /// The field's whole value was read: the skeleton gets `""` in its place.
    private mutating func endValue() {
        skeleton.append(contentsOf: [UInt8(ascii: "\""), UInt8(ascii: "\"")])
        file = .none
    }
}
