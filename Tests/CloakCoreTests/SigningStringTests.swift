import CloakCore
import Testing

/// The pure halves of issue 49's steps: base64 as JOSE and headers spell it, the draft-cavage
/// signing string CyberSource checks, and RFC 5849's base string with the body hash.
struct Base64Tests {
    @Test(arguments: [
        ("", "", ""), ("f", "Zg==", "Zg"), ("fo", "Zm8=", "Zm8"), ("foo", "Zm9v", "Zm9v"),
        ("foob", "Zm9vYg==", "Zm9vYg"), ("fooba", "Zm9vYmE=", "Zm9vYmE"), ("foobar", "Zm9vYmFy", "Zm9vYmFy"),
    ])
    func rfc4648Vectors(plain: String, standard: String, url: String) {
        #expect(Base64.encode(Array(plain.utf8)) == standard)
        #expect(Base64.encodeURL(Array(plain.utf8)) == url)
        #expect(Base64.decode(standard) == Array(plain.utf8))
        #expect(Base64.decode(url, url: true) == Array(plain.utf8))
    }

    @Test func theURLAlphabetSwapsTheTwoSymbols() {
        let bytes: [UInt8] = [0xfb, 0xff, 0xbf]
        #expect(Base64.encode(bytes) == "+/+/")
        #expect(Base64.encodeURL(bytes) == "-_-_")
        #expect(Base64.decode("-_-_", url: true) == bytes)
    }

    @Test(arguments: [
        ("Zg=", false), ("Zg", false), ("Z===", false), ("Zh==", false), ("Zm9v ", false), ("Zm9*", false),
        ("Zg==Zg==", false), ("-_-_", false), ("Zg==", true), ("Z", true), ("Zh", true), ("+/+/", true),
    ])
    func nonCanonicalTextIsRefused(text: String, url: Bool) {
        #expect(Base64.decode(text, url: url) == nil)
    }
}

struct CavageSignatureTests {
    static let headers = [
        ("Host", "apitest.cybersource.com"), ("Date", "Thu, 26 Nov 2026 05:33:33 GMT"),
        ("Digest", "SHA-256=abc="), ("v-c-merchant-id", "testrest"), ("X-Other", "not covered"),
    ]

    @Test func theSigningStringIsTheListedLinesInOrder() throws {
        let s = try CavageSignature(
            covering: ["host", "date", "(request-target)", "digest", "v-c-merchant-id"], method: "POST",
            pathAndQuery: "/pts/v2/payments?x=1", headers: Self.headers)
        #expect(
            s.signingString == """
                host: apitest.cybersource.com
                date: Thu, 26 Nov 2026 05:33:33 GMT
                (request-target): post /pts/v2/payments?x=1
                digest: SHA-256=abc=
                v-c-merchant-id: testrest
                """)
        #expect(
            s.header(keyID: "key-1", algorithm: "HmacSHA256", signature: [1, 2, 3])
                == #"keyid="key-1", algorithm="HmacSHA256", headers="host date (request-target) digest v-c-merchant-id", signature="AQID""#
        )
    }

    @Test func aMissingHeaderOrAStrangeNameIsRefused() {
        #expect(throws: MessageSignatureBase.Failure.missingHeader("profile-id")) {
            try CavageSignature(covering: ["profile-id"], method: "POST", pathAndQuery: "/", headers: Self.headers)
        }
        #expect(throws: MessageSignatureBase.Failure.unknownComponent("Host")) {
            try CavageSignature(covering: ["Host"], method: "POST", pathAndQuery: "/", headers: Self.headers)
        }
    }
}

struct OAuth1SignatureTests {
    @Test(arguments: [
        ("abcABC123-._~", "abcABC123-._~"), ("a b", "a%20b"), ("a+b", "a%2Bb"), ("=&%", "%3D%26%25"),
        ("é", "%C3%A9"), ("/?", "%2F%3F"),
    ])
    func percentEncodingIsRFC5849s(text: String, encoded: String) {
        #expect(OAuth1Signature.encode(text) == encoded)
    }

    /// Parameters sorted by encoded name then value (RFC 5849 3.4.1.3.2), the query's decoded
    /// as forms are (`+` a space) and encoded again, the default port left out.
    @Test func theBaseStringSortsEveryParameter() {
        let s = OAuth1Signature(
            method: "post", scheme: "HTTPS", host: "Sandbox.API.Mastercard.com", port: 443, path: "/send/v1",
            query: "b=2&a=1+1&a=%7E&c", consumerKey: "ck!", nonce: "n0nce", timestamp: 1_764_000_000,
            bodyHash: "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=")
        let parameters = [
            "a=1%201", "a=~", "b=2", "c=", "oauth_body_hash=47DEQpj8HBSa%2B%2FTImW%2B5JCeuQeRkm5NMpJWZG3hSuFU%3D",
            "oauth_consumer_key=ck%21", "oauth_nonce=n0nce", "oauth_signature_method=RSA-SHA256",
            "oauth_timestamp=1764000000", "oauth_version=1.0",
        ].joined(separator: "&")
        #expect(
            s.baseString
                == "POST&" + OAuth1Signature.encode("https://sandbox.api.mastercard.com/send/v1") + "&"
                + OAuth1Signature.encode(parameters))
        #expect(s.authorization(signature: [0xff]).hasPrefix(#"OAuth oauth_body_hash="47DEQ"#))
        #expect(s.authorization(signature: [0xff]).hasSuffix(#",oauth_signature="%2Fw%3D%3D""#))
    }

    @Test func aPortOtherThanTheSchemesIsKept() {
        let s = OAuth1Signature(
            method: "GET", scheme: "https", host: "h", port: 8443, path: "", query: "", consumerKey: "k", nonce: "n",
            timestamp: 1, bodyHash: "x")
        #expect(s.baseString.hasPrefix("GET&https%3A%2F%2Fh%3A8443%2F&"))
    }
}
