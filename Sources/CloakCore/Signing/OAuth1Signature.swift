/// OAuth 1.0a request signing (RFC 5849) with the body hash extension, as Mastercard's APIs
/// check it (issue 49): the signature base string over the method, the base URI and every
/// parameter (the query's and the `oauth_` ones, `oauth_body_hash` among them), and the
/// `Authorization: OAuth …` header. The RSA-SHA256 signature is made elsewhere; this is pure.
public struct OAuth1Signature: Sendable, Equatable {
    /// The `oauth_` parameters but the signature, in the order they are written.
    public let protocolParameters: [(name: String, value: String)]
    /// RFC 5849 3.4.1: `METHOD&base-uri&parameters`, each part percent-encoded.
    public let baseString: String

    public static func == (a: Self, b: Self) -> Bool {
        a.baseString == b.baseString && a.protocolParameters.elementsEqual(b.protocolParameters) { $0 == $1 }
    }

    /// - Parameters:
    ///   - scheme, host, port, path: where the request goes (`path` as sent, percent-encoded).
    ///   - query: the query as sent, without `?` (empty when none): its parameters are signed.
    ///   - bodyHash: the base64 SHA-256 of the body sent.
    public init(
        method: String, scheme: String, host: String, port: Int, path: String, query: String,
        consumerKey: String, nonce: String, timestamp: Int64, bodyHash: String
    ) {
        protocolParameters = [
            ("oauth_body_hash", bodyHash),
            ("oauth_consumer_key", consumerKey),
            ("oauth_nonce", nonce),
            ("oauth_signature_method", "RSA-SHA256"),
            ("oauth_timestamp", String(timestamp)),
            ("oauth_version", "1.0"),
        ]
        let lowerScheme = scheme.lowercased()
        let defaultPort = lowerScheme == "https" ? 443 : 80
        let name = host.utf8.contains(UInt8(ascii: ":")) ? "[" + host.lowercased() + "]" : host.lowercased()
        let baseURI =
            lowerScheme + "://" + name + (port == defaultPort ? "" : ":\(port)") + (path.isEmpty ? "/" : path)
        var parameters: [(String, String)] = protocolParameters.map { (Self.encode($0.name), Self.encode($0.value)) }
        for pair in query.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            // Decoded to bytes and encoded from them: a byte that is not UTF-8 stays itself.
            let name = Self.formDecode(parts[0])
            let value = parts.count > 1 ? Self.formDecode(parts[1]) : []
            parameters.append((Self.encode(bytes: name), Self.encode(bytes: value)))
        }
        parameters.sort { $0.0 == $1.0 ? $0.1 < $1.1 : $0.0 < $1.0 }
        let normalized = parameters.map { $0.0 + "=" + $0.1 }.joined(separator: "&")
        baseString = method.uppercased() + "&" + Self.encode(baseURI) + "&" + Self.encode(normalized)
    }

    /// `Authorization`'s value once `signature` is made over ``baseString``.
    public func authorization(signature: [UInt8]) -> String {
        let all = protocolParameters + [("oauth_signature", Base64.encode(signature))]
        return "OAuth " + all.map { "\($0.name)=\"\(Self.encode($0.value))\"" }.joined(separator: ",")
    }

    /// RFC 5849 3.6: every byte but the unreserved ones as `%XX`, uppercase.
    public static func encode(_ text: String) -> String { encode(bytes: text.utf8) }

    static func encode(bytes: some Sequence<UInt8>) -> String {
        var out = ""
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = Array("0123456789ABCDEF".unicodeScalars)
                out.unicodeScalars.append("%")
                out.unicodeScalars.append(hex[Int(byte >> 4)])
                out.unicodeScalars.append(hex[Int(byte & 15)])
            }
        }
        return out
    }

    /// A query name or value as `application/x-www-form-urlencoded` reads it (`+` is a space);
    /// a malformed escape stays as written.
    static func formDecode(_ text: Substring) -> [UInt8] {
        var bytes: [UInt8] = []
        var i = text.utf8.startIndex
        let utf8 = text.utf8
        while i != utf8.endIndex {
            let b = utf8[i]
            if b == UInt8(ascii: "+") {
                bytes.append(0x20)
            } else if b == UInt8(ascii: "%"), let h = utf8.index(i, offsetBy: 1, limitedBy: utf8.endIndex),
                h != utf8.endIndex, let l = utf8.index(h, offsetBy: 1, limitedBy: utf8.endIndex), l != utf8.endIndex,
                let hi = hexValue(utf8[h]), let lo = hexValue(utf8[l])
            {
                bytes.append(hi << 4 | lo)
                i = l
            } else {
                bytes.append(b)
            }
            i = utf8.index(after: i)
        }
        return bytes
    }

    private static func hexValue(_ b: UInt8) -> UInt8? {
        switch b {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): b - 48
        case UInt8(ascii: "a")...UInt8(ascii: "f"): b - 87
        case UInt8(ascii: "A")...UInt8(ascii: "F"): b - 55
        default: nil
        }
    }
}
