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

    enum Container: Sendable {
        /// An object: the key last read (nil: none yet, or too long to matter), and whether a
        /// key is expected next.
        case object(key: String?, expectingKey: Bool)
        case array
    }

    /// Where a file value is being read.
    enum FileState: Sendable {
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

    enum ObjectExpectation: Sendable {
        case keyOrEnd, key, colon(String), value(String), commaOrEnd
    }

    let isFileField: @Sendable (String) -> Bool
    let maxSkeletonBytes: Int
    public internal(set) var skeleton: [UInt8] = []
    var stack: [Container] = []
    var inString = false
    var escaped = false
    var stringStart = 0
    var file = FileState.none
    var field = ""
    var decoder = Base64Stream()
    var decoded: [UInt8] = []
    var fileName: String?
    var mediaType: String?
    var hasData = false
    var ended = false

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

    static func isSpace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D }

    mutating func skeletonByte(_ b: UInt8, _ emit: (Event) throws(Failure) -> Void) throws(Failure) {
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

}
