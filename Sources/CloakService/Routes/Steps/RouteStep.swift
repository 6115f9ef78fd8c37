import CloakCore
import CloakCrypto

extension Route {
    /// A step on the bytes that go upstream, after reveal (and after redaction on inbound
    /// routes), right before they are sent (issue 49): each runs, in the order written, on what
    /// the one before produced. Keys are loaded with the configuration (``StepKey``).
    package enum Step: Sendable {
        /// `{digest: {header: Content-Digest}}` (RFC 9530, `sha-256=:…:`) or `Digest` (`SHA-256=…`):
        /// the SHA-256 of the final body, replacing any such header the caller sent.
        case digest(DigestHeader)
        /// `{http_signature: {…}}`: RFC 9421 `Signature-Input` and `Signature` (label `sig1`).
        case httpSignature(MessageSignature)
        /// `{http_signature: {scheme: draft-cavage, …}}`: the `Signature` header CyberSource checks.
        case cavageSignature(CavageSigning)
        /// `{oauth1_body_hash: {consumer_key, key}}`: Mastercard's OAuth 1.0a `Authorization`.
        case oauth1BodyHash(OAuth1Signing)
        /// `{jwe: {key, kid, json?}}`: the body, or each selected JSON value, as compact JWE.
        case jwe(JWEEncryption)
        /// `{jws: {algorithm, key, kid?}}`: the body as a compact JWS.
        case jws(JWSSigning)
        /// `{hmac_header: {key, header, encoding, parts}}`: an HMAC-SHA256 as one header's value.
        case hmacHeader(HMACHeader)

        package enum DigestHeader: String, Sendable, CaseIterable {
            case contentDigest = "Content-Digest"
            case digest = "Digest"
        }

        /// RFC 9421 signing: the algorithm's name as written there.
        package struct MessageSignature: Sendable {
            package enum Algorithm: String, Sendable, CaseIterable {
                case hmacSHA256 = "hmac-sha256"
                case rsaPSSSHA512 = "rsa-pss-sha512"
                case rsaPKCS1SHA256 = "rsa-v1_5-sha256"
                case ecdsaP256SHA256 = "ecdsa-p256-sha256"
                case ed25519 = "ed25519"

                /// The asymmetric algorithm, nil for HMAC.
                package var signature: SignatureAlgorithm? {
                    switch self {
                    case .hmacSHA256: nil
                    case .rsaPSSSHA512: .rsaPSSSHA512
                    case .rsaPKCS1SHA256: .rsaPKCS1SHA256
                    case .ecdsaP256SHA256: .ecdsaP256SHA256
                    case .ed25519: .ed25519
                    }
                }
            }
            package var algorithm: Algorithm
            package var key: StepKey
            package var keyID: String
            package var components: [String]
            package var nonce: Bool
        }

        /// draft-cavage with `HmacSHA256` (the only algorithm CyberSource REST takes for it).
        package struct CavageSigning: Sendable {
            package var key: StepKey
            package var keyID: String
            package var components: [String]
        }

        package struct OAuth1Signing: Sendable {
            package var consumerKey: String
            package var key: StepKey
        }

        /// `RSA-OAEP-256` with `A256GCM`, to the provider's public key.
        package struct JWEEncryption: Sendable {
            /// Most values one request's `json` selection seals (each is an RSA encryption).
            package static let maxValues = 100
            package var key: AsymmetricKey
            package var keyID: String?
            /// Empty: the whole body; else each selected value's text.
            package var json: [JSONPath]
        }

        package struct JWSSigning: Sendable {
            package enum Algorithm: String, Sendable, CaseIterable {
                case rs256 = "RS256"
                case es256 = "ES256"
                case ps256 = "PS256"

                package var signature: SignatureAlgorithm {
                    switch self {
                    case .rs256: .rsaPKCS1SHA256
                    case .es256: .ecdsaP256SHA256
                    case .ps256: .rsaPSSSHA256
                    }
                }
            }
            package var algorithm: Algorithm
            package var key: StepKey
            package var keyID: String?
        }

        package struct HMACHeader: Sendable {
            package enum Encoding: String, Sendable { case hex, base64 }
            /// What the MAC covers, joined by `\n`.
            package enum Part: Sendable, Equatable {
                case body, method, path
                case header(String)
            }
            package var key: HMACKey
            package var header: String
            package var encoding: Encoding
            package var parts: [Part]
        }

        /// Whether the step would hold its thread long (a private key's signature, on a token
        /// or not): such steps run off the loop (``RouteStepRun``).
        var holdsThread: Bool {
            switch self {
            case .httpSignature(let signing): if case .privateKey = signing.key { true } else { false }
            case .oauth1BodyHash, .jws: true
            case .digest, .cavageSignature, .jwe, .hmacHeader: false
            }
        }

        /// The step's name, for the access log, the audit line and the span (never a key).
        package var name: String {
            switch self {
            case .digest: "digest"
            case .httpSignature, .cavageSignature: "http_signature"
            case .oauth1BodyHash: "oauth1_body_hash"
            case .jwe: "jwe"
            case .jws: "jws"
            case .hmacHeader: "hmac_header"
            }
        }
    }

    /// A step on the answer as it came, before the answer's operations (issue 49).
    package enum ResponseStep: Sendable {
        /// `{jwe_decrypt: {key}}`: an answer that is a compact JWE to Cloak's key is decrypted.
        case jweDecrypt(any PrivateKeyOperations)

        package var name: String { "jwe_decrypt" }
    }
}
