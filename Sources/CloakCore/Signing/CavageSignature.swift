/// The HTTP signature of draft-cavage-http-signatures (as CyberSource REST checks it, issue 49):
/// a signing string of `name: value` lines, one per covered header or `(request-target)`, and a
/// `Signature` header naming the key, the algorithm and the headers. The MAC over it is made
/// elsewhere (CloakCrypto); this is pure.
public struct CavageSignature: Sendable, Equatable {
    /// The bytes to sign: the lines joined by `\n`, no newline at the end.
    public let signingString: String
    public let components: [String]

    /// The signing string covering `components` (lowercase header names, and
    /// `(request-target)`: the method lowercased, a space, the path with its query, as sent).
    /// - Throws: a header the request lacks (repeated ones are joined with `, `), or a name
    ///   that is not a lowercase token.
    public init(
        covering components: [String], method: String, pathAndQuery: String, headers: [(name: String, value: String)]
    ) throws(MessageSignatureBase.Failure) {
        var lines: [String] = []
        for component in components {
            if component == "(request-target)" {
                lines.append("(request-target): \(method.lowercased()) \(pathAndQuery)")
                continue
            }
            guard MessageSignatureBase.isLowercaseToken(component) else { throw .unknownComponent(component) }
            let values = headers.filter { $0.name.caseInsensitiveEquals(component) }
                .map { MessageSignatureBase.trimmed($0.value) }
            guard !values.isEmpty else { throw .missingHeader(component) }
            lines.append("\(component): \(values.joined(separator: ", "))")
        }
        signingString = lines.joined(separator: "\n")
        self.components = components
    }

    /// `Signature`'s value: `keyid="…", algorithm="…", headers="…", signature="…"`.
    public func header(keyID: String, algorithm: String, signature: [UInt8]) -> String {
        "keyid=\"\(Self.quoted(keyID))\", algorithm=\"\(algorithm)\", headers=\"\(components.joined(separator: " "))\", signature=\"\(Base64.encode(signature))\""
    }

    private static func quoted(_ text: String) -> String { MessageSignatureBase.quoted(text) }
}
