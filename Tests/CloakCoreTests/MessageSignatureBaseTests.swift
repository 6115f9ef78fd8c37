import Foundation
import Testing

@testable import CloakCore

/// RFC 9421 signature bases (issue 49, begun): built as the RFC's own test vectors give them,
/// with missing headers and unknown components refused.
@Suite struct MessageSignatureBaseTests {
    /// RFC 9421's test request (Appendix B.2): POST /foo?param=Value&Pet=dog to example.com.
    static let request = MessageSignatureBase.Request(
        method: "POST", targetURI: "https://example.com/foo?param=Value&Pet=dog", authority: "example.com",
        path: "/foo", query: "?param=Value&Pet=dog",
        headers: [
            ("Host", "example.com"), ("Date", "Tue, 20 Apr 2021 02:07:55 GMT"), ("Content-Type", "application/json"),
            (
                "Content-Digest",
                "sha-512=:WZDPaVn/7XgHaAy8pmojAkGWoRx2UFChF41A2svX+TaPm+AbwAgBWnrIiYllu7BNNyealdVLvRwEmTHWXvJwew==:"
            ),
            ("Content-Length", "18"),
        ])

    @Test func theRFCsHMACExampleBaseIsBuiltExactly() throws {
        // RFC 9421 B.2.5 (sig-b25): date, @authority, content-type; created; keyid.
        let base = try MessageSignatureBase(
            covering: ["date", "@authority", "content-type"], of: Self.request,
            parameters: .init(created: 1_618_884_473, keyID: "test-shared-secret"))
        #expect(
            base.base == """
                "date": Tue, 20 Apr 2021 02:07:55 GMT
                "@authority": example.com
                "content-type": application/json
                "@signature-params": ("date" "@authority" "content-type");created=1618884473;keyid="test-shared-secret"
                """)
    }

    @Test func theRFCsEd25519ExampleBaseIsBuiltExactly() throws {
        // RFC 9421 B.2.6 (sig-b26).
        let base = try MessageSignatureBase(
            covering: ["date", "@method", "@path", "@authority", "content-type", "content-length"], of: Self.request,
            parameters: .init(created: 1_618_884_473, keyID: "test-key-ed25519"))
        #expect(
            base.base == """
                "date": Tue, 20 Apr 2021 02:07:55 GMT
                "@method": POST
                "@path": /foo
                "@authority": example.com
                "content-type": application/json
                "content-length": 18
                "@signature-params": ("date" "@method" "@path" "@authority" "content-type" "content-length");created=1618884473;keyid="test-key-ed25519"
                """)
        let headers = base.headers(label: "sig1", signature: [1, 2, 3])
        #expect(headers.signatureInput.hasPrefix("sig1=(\"date\" \"@method\""))
        #expect(headers.signature == "sig1=:AQID:")
    }

    @Test func aMissingHeaderOrAnUnknownComponentIsRefused() {
        #expect(throws: MessageSignatureBase.Failure.missingHeader("digest")) {
            _ = try MessageSignatureBase(covering: ["digest"], of: Self.request, parameters: .init(created: 1))
        }
        for bad in ["@request-response", "Content-Type", "", "a b"] {
            #expect(throws: MessageSignatureBase.Failure.unknownComponent(bad)) {
                _ = try MessageSignatureBase(covering: [bad], of: Self.request, parameters: .init(created: 1))
            }
        }
    }

    @Test func base64AndDigestHeadersMatchFoundation() {
        for n in 0..<40 {
            let bytes = (0..<n).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            #expect(Base64.encode(bytes) == Data(bytes).base64EncodedString())
        }
        let digest = [UInt8](repeating: 0xAB, count: 32)
        #expect(
            ContentDigestHeader.contentDigest(sha256: digest) == "sha-256=:" + Data(digest).base64EncodedString() + ":")
        #expect(ContentDigestHeader.digest(sha256: digest) == "SHA-256=" + Data(digest).base64EncodedString())
    }
}
