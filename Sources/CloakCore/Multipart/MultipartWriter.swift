/// Writes a `multipart/form-data` body part by part (RFC 7578): for a client uploading files
/// (CloakCollect) and for a route revealing a file into the body it sends upstream. A part's
/// bytes may be given in pieces (``bytes(_:)``), so a file is never assembled whole.
///
/// Names and file names are written quoted, with `"`, CR and LF percent-encoded as browsers do;
/// the boundary must not occur in the content (a random one of 24 or more characters does not,
/// in practice; ``init(boundary:)`` refuses one that breaks RFC 2046's rules).
public struct MultipartWriter: Sendable {
    public let boundary: [UInt8]
    private var open = false

    /// nil for a boundary that is not 1 to 70 of RFC 2046's characters.
    public init?(boundary: String) {
        guard MultipartParser.boundary(contentType: "multipart/form-data; boundary=\"\(boundary)\"") != nil else {
            return nil
        }
        self.boundary = Array(boundary.utf8)
    }

    /// The request's `Content-Type`.
    public var contentType: String { "multipart/form-data; boundary=\(String(decoding: boundary, as: UTF8.self))" }

    /// Ends the part before (if any) and starts a part: its head.
    public mutating func begin(name: String, fileName: String? = nil, contentType: String? = nil) -> [UInt8] {
        defer { open = true }
        return head(first: !open, name: name, fileName: fileName, contentType: contentType)
    }

    /// A part's head without the writer's state: `first` when no part comes before it (the
    /// others start by ending the part before).
    public func head(first: Bool, name: String, fileName: String? = nil, contentType: String? = nil) -> [UInt8] {
        var out: [UInt8] = first ? [] : [13, 10]
        out += Array("--".utf8) + boundary + [13, 10]
        var disposition = "Content-Disposition: form-data; name=\"\(Self.quoted(name))\""
        if let fileName { disposition += "; filename=\"\(Self.quoted(fileName))\"" }
        out += Array(disposition.utf8) + [13, 10]
        if let contentType, contentType.unicodeScalars.allSatisfy({ $0.value >= 32 && $0.value < 127 }) {
            out += Array("Content-Type: \(contentType)".utf8) + [13, 10]
        }
        return out + [13, 10]
    }

    /// The closing boundary (after the last part's bytes).
    public mutating func finish() -> [UInt8] {
        defer { open = false }
        return closing(afterParts: open)
    }

    /// The closing boundary without the writer's state (`afterParts`: it ends a part).
    public func closing(afterParts: Bool) -> [UInt8] {
        (afterParts ? [13, 10] : []) + Array("--".utf8) + boundary + Array("--\r\n".utf8)
    }

    /// A whole body of text parts and files, for small bodies and tests.
    public mutating func body(_ parts: [(name: String, fileName: String?, contentType: String?, bytes: [UInt8])])
        -> [UInt8]
    {
        var out: [UInt8] = []
        for part in parts {
            out += begin(name: part.name, fileName: part.fileName, contentType: part.contentType) + part.bytes
        }
        return out + finish()
    }

    /// `"`, CR, LF and `%` percent-encoded (RFC 7578 4.2, as browsers write them).
    static func quoted(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "%22"
            case "\r": out += "%0D"
            case "\n": out += "%0A"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
