/// Inside a file's value: base64 (or a data URL) decoded as it comes, and the value's end.
extension CollectJSONSplitter {
    // MARK: In a file value

    mutating func fileByte(_ b: UInt8, _ emit: (Event) throws(Failure) -> Void) throws(Failure) {
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

    mutating func decode(_ b: UInt8) throws(Failure) {
        do { try decoder.feed(CollectionOfOne(b), into: &decoded) } catch {
            throw .malformed("field \(field): the file's base64 is not valid")
        }
    }

    mutating func begin(_ emit: (Event) throws(Failure) -> Void) throws(Failure) {
        decoder = Base64Stream()
        fileName = nil
        mediaType = nil
        hasData = false
        try emit(.fileBegin(field: field))
    }

    mutating func end(inArray: Bool, _ emit: (Event) throws(Failure) -> Void) throws(Failure) {
        if !decoded.isEmpty {
            try emit(.fileBytes(decoded))
            decoded.removeAll(keepingCapacity: true)
        }
        try emit(.fileEnd(fileName: fileName, mediaType: mediaType))
        if inArray { file = .afterArrayItem } else { endValue() }
    }

    /// The field's whole value was read: the skeleton gets `""` in its place.
    mutating func endValue() {
        skeleton.append(contentsOf: [UInt8(ascii: "\""), UInt8(ascii: "\"")])
        file = .none
    }
}
