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
    public let bytes: [UInt8]
    /// ``bytes`` as text.
    public var base: String { String(decoding: bytes, as: UTF8.self) }
    /// `Signature-Input`'s value for `label` (without the label): the list and its parameters.
    public let signatureParams: String

    /// The base covering `components` of `request`.
    /// - Throws: a header the request lacks (repeated headers are joined with `, `, as HTTP
    ///   combines them), or a component that is not a lowercase header name or a derived one.
    public init(covering components: [String], of request: Request, parameters: Parameters) throws(Failure) {
        // Built as bytes in one buffer, header names compared in place: callgrind counted
        // 49,000 instructions a request for four components when each made lowercased copies,
        // 25,000 with string appends.
        var base: [UInt8] = []
        base.reserveCapacity(512)
        var params: [UInt8] = [UInt8(ascii: "(")]
        params.reserveCapacity(128)
        for (i, component) in components.enumerated() {
            base.append(UInt8(ascii: "\""))
            base.append(contentsOf: component.utf8)
            base.append(contentsOf: "\": ".utf8)
            switch component {
            case "@method": base.append(contentsOf: request.method.utf8)
            case "@target-uri": base.append(contentsOf: request.targetURI.utf8)
            case "@authority": base.append(contentsOf: request.authority.utf8)
            case "@path": base.append(contentsOf: request.path.utf8)
            case "@query": base.append(contentsOf: request.query.utf8)
            default:
                guard Self.isLowercaseToken(component) else { throw .unknownComponent(component) }
                var found = false
                for header in request.headers where header.name.caseInsensitiveEquals(component) {
                    if found { base.append(contentsOf: ", ".utf8) }
                    base.append(contentsOf: Self.trimmed(header.value).utf8)
                    found = true
                }
                guard found else { throw .missingHeader(component) }
            }
            base.append(UInt8(ascii: "\n"))
            if i > 0 { params.append(UInt8(ascii: " ")) }
            params.append(UInt8(ascii: "\""))
            params.append(contentsOf: component.utf8)
            params.append(UInt8(ascii: "\""))
        }
        params.append(contentsOf: ");created=".utf8)
        params.append(contentsOf: String(parameters.created).utf8)
        for (name, value) in [("keyid", parameters.keyID), ("alg", parameters.algorithm), ("nonce", parameters.nonce)] {
            guard let value else { continue }
            params.append(UInt8(ascii: ";"))
            params.append(contentsOf: name.utf8)
            params.append(contentsOf: "=\"".utf8)
            params.append(contentsOf: Self.quoted(value).utf8)
            params.append(UInt8(ascii: "\""))
        }
        base.append(contentsOf: "\"@signature-params\": ".utf8)
        base.append(contentsOf: params)
        bytes = base
        signatureParams = String(decoding: params, as: UTF8.self)
    }

    /// `Signature-Input` and `Signature` header values for `label` and the signature's bytes.
    public func headers(label: String, signature: [UInt8]) -> (signatureInput: String, signature: String) {
        (label + "=" + signatureParams, label + "=:" + Base64.encode(signature) + ":")
    }

    /// Whether `name` is a token (RFC 9110 5.6.2) without uppercase letters, as covered header
    /// names are written.
    static func isLowercaseToken(_ name: String) -> Bool {
        !name.isEmpty
            && name.utf8.allSatisfy { b in
                switch b {
                case 0x61...0x7A, 0x30...0x39, 0x21, 0x23...0x27, 0x2A, 0x2B, 0x2D, 0x2E, 0x5E, 0x5F, 0x60, 0x7C, 0x7E:
                    true
                default: false
                }
            }
    }

    /// A header value as covered: its outer spaces and tabs gone (RFC 9421 2.1).
    static func trimmed(_ value: String) -> String {
        guard let first = value.utf8.first, let last = value.utf8.last,
            first == 0x20 || first == 0x09 || last == 0x20 || last == 0x09
        else { return value }
        var scalars = Substring(value)
        while let first = scalars.first, first == " " || first == "\t" { scalars = scalars.dropFirst() }
        while let last = scalars.last, last == " " || last == "\t" { scalars = scalars.dropLast() }
        return String(scalars)
    }

    /// A structured-field string's contents: `\` and `"` escaped.
    static func quoted(_ text: String) -> String {
        guard text.utf8.contains(where: { $0 == 0x5C || $0 == 0x22 }) else { return text }
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
