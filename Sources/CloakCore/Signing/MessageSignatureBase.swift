/// The signature base of RFC 9421 (HTTP Message Signatures) for a request Cloak sends (issue 49:
/// a route's `http_signature` step, run after reveal on the bytes that go upstream): each covered
/// component on a line of its own, `"name": value`, then `"@signature-params"` with the list and
/// its parameters. The MAC or signature over it is made elsewhere (CloakCrypto); this is pure.
public struct MessageSignatureBase: Sendable, Equatable {
    /// What a request offers to be covered.
    public struct Request: Sendable {
        public var method: String
        /// `https://host[:port]/path?query`, as sent.
        public var targetURI: String
        /// `host[:port]`, lowercased, the port only when not the scheme's.
        public var authority: String
        public var path: String
        /// With its `?`; `?` alone when there is none (RFC 9421 2.2.7).
        public var query: String
        public var headers: [(name: String, value: String)]

        public init(
            method: String, targetURI: String, authority: String, path: String, query: String,
            headers: [(name: String, value: String)]
        ) {
            self.method = method
            self.targetURI = targetURI
            self.authority = authority
            self.path = path
            self.query = query
            self.headers = headers
        }
    }

    /// The signature's parameters, in the order they are written.
    public struct Parameters: Sendable, Equatable {
        public var created: Int64
        public var keyID: String?
        public var algorithm: String?
        public var nonce: String?

        public init(created: Int64, keyID: String? = nil, algorithm: String? = nil, nonce: String? = nil) {
            self.created = created
            self.keyID = keyID
            self.algorithm = algorithm
            self.nonce = nonce
        }
    }

    public enum Failure: Error, Sendable, Equatable, CustomStringConvertible {
        /// A covered header the request does not have.
        case missingHeader(String)
        /// A derived component Cloak does not make, or a name that is not a lowercase token.
        case unknownComponent(String)
        public var description: String {
            switch self {
            case .missingHeader(let name): "the request has no \(name) header to sign"
            case .unknownComponent(let name): "\(name) is not a component Cloak can sign"
            }
        }
    }

    /// The bytes to sign.
    public let base: String
    /// `Signature-Input`'s value for `label` (without the label): the list and its parameters.
    public let signatureParams: String

    /// The base covering `components` of `request`.
    /// - Throws: a header the request lacks (repeated headers are joined with `, `, as HTTP
    ///   combines them), or a component that is not a lowercase header name or a derived one.
    public init(covering components: [String], of request: Request, parameters: Parameters) throws(Failure) {
        var lines: [String] = []
        for component in components {
            let value: String
            switch component {
            case "@method": value = request.method
            case "@target-uri": value = request.targetURI
            case "@authority": value = request.authority
            case "@path": value = request.path
            case "@query": value = request.query
            default:
                guard !component.hasPrefix("@"), !component.isEmpty,
                    component.unicodeScalars.allSatisfy({ Self.tokenLowercase.contains($0) })
                else { throw .unknownComponent(component) }
                let values = request.headers.filter { $0.name.lowercased() == component }.map { Self.trimmed($0.value) }
                guard !values.isEmpty else { throw .missingHeader(component) }
                value = values.joined(separator: ", ")
            }
            lines.append("\"\(component)\": \(value)")
        }
        var params = "(" + components.map { "\"\($0)\"" }.joined(separator: " ") + ")"
        params += ";created=\(parameters.created)"
        if let keyID = parameters.keyID { params += ";keyid=\"\(Self.quoted(keyID))\"" }
        if let algorithm = parameters.algorithm { params += ";alg=\"\(Self.quoted(algorithm))\"" }
        if let nonce = parameters.nonce { params += ";nonce=\"\(Self.quoted(nonce))\"" }
        lines.append("\"@signature-params\": \(params)")
        base = lines.joined(separator: "\n")
        signatureParams = params
    }

    /// `Signature-Input` and `Signature` header values for `label` and the signature's bytes.
    public func headers(label: String, signature: [UInt8]) -> (signatureInput: String, signature: String) {
        (label + "=" + signatureParams, label + "=:" + Base64.encode(signature) + ":")
    }

    private static let tokenLowercase = Set("abcdefghijklmnopqrstuvwxyz0123456789!#$%&'*+-.^_`|~".unicodeScalars)

    /// A header value as covered: its outer spaces and tabs gone (RFC 9421 2.1).
    static func trimmed(_ value: String) -> String {
        var scalars = Substring(value)
        while let first = scalars.first, first == " " || first == "\t" { scalars = scalars.dropFirst() }
        while let last = scalars.last, last == " " || last == "\t" { scalars = scalars.dropLast() }
        return String(scalars)
    }

    /// A structured-field string's contents: `\` and `"` escaped.
    static func quoted(_ text: String) -> String {
        var out = ""
        for c in text {
            if c == "\\" || c == "\"" { out.append("\\") }
            out.append(c)
        }
        return out
    }
}

/// RFC 9530's `Content-Digest` (`sha-256=:…:`) and the older `Digest` (`SHA-256=…`) for a body
/// whose SHA-256 is given (the hash is made in CloakCrypto).
public enum ContentDigestHeader {
    public static func contentDigest(sha256: [UInt8]) -> String { "sha-256=:" + Base64.encode(sha256) + ":" }
    public static func digest(sha256: [UInt8]) -> String { "SHA-256=" + Base64.encode(sha256) }
}
