import CloakCore
import CloakCrypto
import Foundation
import Testing

@testable import CloakService

/// An answer's JWE is the upstream's to shape: anything but RSA-OAEP-256 with A256GCM, whole,
/// to Cloak's key, is refused with one message per cause, never a crash, and never an oracle on
/// which part was wrong once the shape is right.
struct CompactJOSETests {
    static let key: AsymmetricKey = {
        let pem = try! String(contentsOfFile: StepKeys.shared.privateKey("rsa"), encoding: .utf8)
        return try! AsymmetricKey.read(pem: Array(pem.utf8))
    }()
    static let publicKey: AsymmetricKey = {
        try! AsymmetricKey.read(pem: Array(try! StepKeys.shared.publicPEM("rsa").utf8))
    }()

    static func sealed(_ plaintext: String = #"{"a":1}"#, contentType: String? = "json") throws -> String {
        try CompactJOSE.encrypt(Array(plaintext.utf8), to: publicKey, keyID: "k", contentType: contentType)
    }

    static func header(_ json: String) -> String { Base64.encodeURL(Array(json.utf8)) }

    @Test func aRoundTripGivesThePlaintextAndItsType() throws {
        let (plaintext, type) = try CompactJOSE.decrypt(Array(try Self.sealed().utf8), with: Self.key)
        #expect(plaintext == Array(#"{"a":1}"#.utf8))
        #expect(type == "application/json")
        let untyped = try CompactJOSE.decrypt(Array(try Self.sealed(contentType: nil).utf8), with: Self.key)
        #expect(untyped.contentType == nil)
    }

    @Test func onlyFiveBase64URLPartsLookLikeAJWE() throws {
        #expect(CompactJOSE.looksLikeJWE(Array(try Self.sealed().utf8)))
        #expect(CompactJOSE.looksLikeJWE(Array(("\n " + (try Self.sealed()) + "\r\n").utf8)))
        for body in ["", "{}", "a.b.c", "a.b.c.d.e.f", "a.b.c.d.e=", "a.b.c.d.e\n.", "a b.c.d.e.f"] {
            #expect(!CompactJOSE.looksLikeJWE(Array(body.utf8)), "\(body)")
        }
    }

    @Test(arguments: [
        (#"{"alg":"RSA-OAEP","enc":"A256GCM"}"#, "RSA-OAEP-256 with A256GCM"),
        (#"{"alg":"dir","enc":"A256GCM"}"#, "RSA-OAEP-256 with A256GCM"),
        (#"{"alg":"RSA-OAEP-256","enc":"A128CBC-HS256"}"#, "RSA-OAEP-256 with A256GCM"),
        (#"{"alg":"RSA-OAEP-256","enc":"A256GCM","zip":"DEF"}"#, "zip or crit"),
        (#"{"alg":"RSA-OAEP-256","enc":"A256GCM","crit":["exp"]}"#, "zip or crit"),
        // A member twice: the JSON parser itself refuses it (no last-one-wins).
        (#"{"alg":"none","enc":"A256GCM","alg":"RSA-OAEP-256"}"#, "not base64url JSON"),
        (#"{"alg":"RSA-OAEP-256","enc":"A256GCM","cty":7}"#, "cty"),
        (#"["RSA-OAEP-256"]"#, "not base64url JSON"),
    ])
    func aHeaderCloakDoesNotTakeIsRefused(header: String, message: String) throws {
        var parts = try Self.sealed().split(separator: ".").map(String.init)
        parts[0] = Self.header(header)
        #expect {
            try CompactJOSE.decrypt(Array(parts.joined(separator: ".").utf8), with: Self.key)
        } throws: { ($0 as? CompactJOSE.DecryptionFailure)?.description.contains(message) == true }
    }

    /// Each part altered in turn: one answer, whatever was changed.
    @Test(arguments: 0..<5)
    func anAlteredPartDoesNotDecrypt(part: Int) throws {
        var parts = try Self.sealed().split(separator: ".").map(String.init)
        var bytes = Base64.decode(parts[part], url: true)!
        bytes[bytes.count / 2] ^= 1
        parts[part] = Base64.encodeURL(bytes)
        #expect {
            try CompactJOSE.decrypt(Array(parts.joined(separator: ".").utf8), with: Self.key)
        } throws: { error in
            let text = (error as? CompactJOSE.DecryptionFailure)?.description ?? ""
            return part == 0 ? !text.isEmpty : text == "the answer's JWE does not decrypt with the route's key"
        }
    }

    @Test func wrongSizesAndHugeHeadersAreRefusedNotTrusted() throws {
        var parts = try Self.sealed().split(separator: ".").map(String.init)
        parts[2] = Base64.encodeURL([UInt8](repeating: 0, count: 16))  // a 128-bit IV
        #expect(throws: CompactJOSE.DecryptionFailure.self) {
            try CompactJOSE.decrypt(Array(parts.joined(separator: ".").utf8), with: Self.key)
        }
        var deep = try Self.sealed().split(separator: ".").map(String.init)
        deep[0] = Self.header(String(repeating: "[", count: 100_000))
        #expect(throws: CompactJOSE.DecryptionFailure.self) {
            try CompactJOSE.decrypt(Array(deep.joined(separator: ".").utf8), with: Self.key)
        }
    }
}
