import CloakCore
import CloakCrypto
import CloakHTTP
import Foundation

/// A request as it is about to go upstream, which a route's steps rewrite (issue 49): the
/// target and the headers as sent, and the final body. `Host` and `Content-Length` are not among
/// the headers (the client writes them, ``MessageWriter``): a step that covers them sees the
/// values the client will write.
struct OutgoingMessage: Sendable {
    var method: String
    var scheme: UpstreamRequest.Scheme
    var host: String
    var port: Int
    /// The request-target: the path as sent (percent-encoded), and `?query` when there is one.
    var target: String
    var headers: [(name: String, value: String)]
    var body: [UInt8]
    /// What the steps wrote over the body: a JWS's payload (the body, base64url), a digest, a
    /// signature or MAC. An answer that echoes one is refused to a caller who may not see the
    /// values (``RevealedValues/add(_:)``).
    var written = StepWrites()

    /// `Host` as the client writes it (``MessageWriter``): an IPv6 literal bracketed, the port
    /// unless the scheme's; lowercased.
    let authority: String

    init(
        method: String, scheme: UpstreamRequest.Scheme, host: String, port: Int, target: String,
        headers: [(name: String, value: String)], body: [UInt8]
    ) {
        self.method = method
        self.scheme = scheme
        self.host = host
        self.port = port
        self.target = target
        self.headers = headers
        self.body = body
        let name = host.utf8.contains(UInt8(ascii: ":")) ? "[" + host + "]" : host
        let isDefault = (scheme == .https && port == 443) || (scheme == .http && port == 80)
        authority = (isDefault ? name : name + ":" + String(port)).lowercased()
    }

    private var queryMark: String.Index? { target.utf8.firstIndex(of: UInt8(ascii: "?")) }
    var path: String { String(target[..<(queryMark ?? target.endIndex)]) }
    /// Without `?`; empty when there is none.
    var query: String {
        guard let mark = queryMark else { return "" }
        return String(target[target.index(after: mark)...])
    }

    /// The headers a signature may cover: those given, and `Host` and `Content-Length` as the
    /// client writes them (`Content-Length` only when it does: a body, or POST, PUT, PATCH).
    var coverableHeaders: [(name: String, value: String)] {
        let sendsLength = !body.isEmpty || method == "POST" || method == "PUT" || method == "PATCH"
        return headers + [("host", authority)] + (sendsLength ? [("content-length", String(body.count))] : [])
    }

    mutating func setHeader(_ name: String, _ value: String) {
        headers.removeAll { $0.name.caseInsensitiveEquals(name) }
        headers.append((name, value))
    }

    /// Sets a header whose value is computed over the body (``written``).
    mutating func setDerivedHeader(_ name: String, _ value: String) {
        setHeader(name, value)
        if value.utf8.count >= RevealedValues.minimumLength { written.exact.append(Array(value.utf8)) }
    }

    /// Holds `raw` (a digest, signature or MAC of revealed data) in every form an answer could
    /// echo it in (``RevealedValues/encodings(of:)``), beside the header that carries it, and
    /// for its runs (``EncodedRuns``).
    mutating func derived(_ raw: [UInt8]) {
        written.exact += RevealedValues.encodings(of: raw)
        written.computed.append(raw)
    }
}

extension Route.Step {
    /// Runs `steps` in order on `message` at `now` (seconds since the epoch); `nonce` gives
    /// fresh random bytes.
    ///
    /// - Throws: why a step could not run, and then nothing is sent: 400 1002 for what the
    ///   caller can fix (a covered header the request lacks, a body that is not JSON), 502 1400
    ///   for a key that failed at the token or in OpenSSL.
    /// - Parameter firstIndex: the first step's index in the route's `request` list (after the
    ///   operations), so an error names the step as the configuration does.
    static func apply(
        _ steps: [Route.Step], to message: inout OutgoingMessage, firstIndex: Int = 0,
        now: Int64 = Int64(Date().timeIntervalSince1970), nonce: () -> [UInt8] = { SecureRandom.bytes(16) }
    ) throws(CloakError) {
        for (i, step) in steps.enumerated() {
            do throws(StepFailure) {
                try step.run(on: &message, now: now, nonce: nonce)
            } catch {
                let named = "the route's request[\(firstIndex + i)] (\(step.name))"
                switch error {
                case .request(let why):
                    throw .malformed("\(named): \(why)")
                case .key(let why):
                    throw CloakError(.unexpectedResponseType, "\(named) failed: \(why); nothing was sent")
                }
            }
        }
    }

    enum StepFailure: Error {
        /// The request cannot be signed as it is (a covered header it lacks, a body that is not JSON).
        case request(String)
        /// The key or the crypto failed.
        case key(String)
    }

    private func run(on message: inout OutgoingMessage, now: Int64, nonce: () -> [UInt8]) throws(StepFailure) {
        switch self {
        case .digest(let header):
            let sha256 = Digest.sha256(message.body)
            message.derived(sha256)
            message.setDerivedHeader(
                header.rawValue,
                header == .contentDigest
                    ? ContentDigestHeader.contentDigest(sha256: sha256) : ContentDigestHeader.digest(sha256: sha256))

        case .httpSignature(let signing):
            let request = MessageSignatureBase.Request(
                method: message.method,
                targetURI: message.scheme.rawValue + "://" + message.authority + message.target,
                authority: message.authority, path: message.path, query: "?" + message.query,
                headers: message.coverableHeaders)
            let base: MessageSignatureBase
            do {
                base = try MessageSignatureBase(
                    covering: signing.components, of: request,
                    parameters: .init(
                        created: now, keyID: signing.keyID, algorithm: signing.algorithm.rawValue,
                        nonce: signing.nonce ? Base64.encodeURL(nonce()) : nil))
            } catch {
                throw .request(error.description)
            }
            let signature = try Self.sign(base.bytes, with: signing.key, signing.algorithm.signature)
            let headers = base.headers(label: "sig1", signature: signature)
            message.derived(signature)
            message.setHeader("Signature-Input", headers.signatureInput)
            message.setDerivedHeader("Signature", headers.signature)

        case .cavageSignature(let signing):
            if signing.components.contains("date"),
                !message.headers.contains(where: { $0.name.caseInsensitiveEquals("date") })
            {
                message.headers.append(("Date", String(decoding: HTTPDate.format(Int(now)), as: UTF8.self)))
            }
            let string: CavageSignature
            do {
                string = try CavageSignature(
                    covering: signing.components, method: message.method, pathAndQuery: message.target,
                    headers: message.coverableHeaders)
            } catch {
                throw .request(error.description)
            }
            let mac = try Self.sign(Array(string.signingString.utf8), with: signing.key, nil)
            message.derived(mac)
            message.setDerivedHeader(
                "Signature", string.header(keyID: signing.keyID, algorithm: "HmacSHA256", signature: mac))

        case .oauth1BodyHash(let signing):
            let bodyHash = Digest.sha256(message.body)
            let oauth = OAuth1Signature(
                method: message.method, scheme: message.scheme.rawValue, host: message.host, port: message.port,
                path: message.path, query: message.query, consumerKey: signing.consumerKey,
                nonce: Base64.encodeURL(nonce()), timestamp: now, bodyHash: Base64.encode(bodyHash))
            let signature = try Self.sign(Array(oauth.baseString.utf8), with: signing.key, .rsaPKCS1SHA256)
            message.derived(bodyHash)
            message.derived(signature)
            message.setDerivedHeader("Authorization", oauth.authorization(signature: signature))

        case .jwe(let encryption):
            guard !encryption.json.isEmpty else {
                let type = message.headers.last { $0.name.caseInsensitiveEquals("content-type") }?.value
                message.body = Array(try Self.seal(message.body, encryption, contentType: type).utf8)
                message.setHeader("Content-Type", "application/jose")
                return
            }
            let selection: JSONSelection?
            do { selection = try JSONSelection.select(encryption.json, in: message.body) } catch {
                throw .request(error.message)
            }
            guard let selection else { return }
            // Each value costs an RSA encryption: as many as a route may reveal at most.
            guard selection.matches.count <= Route.Step.JWEEncryption.maxValues else {
                throw .request(
                    "it selects \(selection.matches.count) values; a jwe step seals at most "
                        + "\(Route.Step.JWEEncryption.maxValues)")
            }
            var replacements: [String] = []
            for match in selection.matches {
                replacements.append(try Self.seal(Array(match.text.value.utf8), encryption, contentType: nil))
            }
            message.body = selection.rewrite(replacements)

        case .jws(let signing):
            guard case .privateKey(let key) = signing.key else { throw .key("the JWS key is not private") }
            do {
                let jws = try CompactJOSE.sign(
                    message.body, algorithm: signing.algorithm, keyID: signing.keyID, key: key)
                let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
                if parts[1].utf8.count >= RevealedValues.minimumLength {
                    message.written.exact.append(Array(parts[1].utf8))
                }
                if let signature = Base64.decode(parts[2], url: true) { message.derived(signature) }
                message.body = Array(jws.utf8)
            } catch {
                throw .key(error.description)
            }
            message.setHeader("Content-Type", "application/jose")

        case .hmacHeader(let mac):
            var covered: [UInt8] = []
            for (i, part) in mac.parts.enumerated() {
                if i > 0 { covered.append(UInt8(ascii: "\n")) }
                switch part {
                case .body: covered += message.body
                case .method: covered += Array(message.method.utf8)
                case .path: covered += Array(message.path.utf8)
                case .header(let name):
                    let values = message.coverableHeaders.filter { $0.name.caseInsensitiveEquals(name) }.map(\.value)
                    guard !values.isEmpty else { throw .request("the request has no \(name) header to sign") }
                    covered += Array(values.joined(separator: ", ").utf8)
                }
            }
            let tag = mac.key.authenticate(covered)
            message.derived(tag)
            message.setDerivedHeader(mac.header, mac.encoding == .hex ? Hex.string(tag) : Base64.encode(tag))
        }
    }

    /// `plaintext` as a compact JWE to the step's key.
    private static func seal(_ plaintext: [UInt8], _ step: Route.Step.JWEEncryption, contentType: String?)
        throws(StepFailure) -> String
    {
        do {
            return try CompactJOSE.encrypt(plaintext, to: step.key, keyID: step.keyID, contentType: contentType)
        } catch {
            throw .key(error.description)
        }
    }

    /// An HMAC-SHA256 when `algorithm` is nil (the key a secret), else the private key's signature.
    private static func sign(_ input: [UInt8], with key: StepKey, _ algorithm: SignatureAlgorithm?) throws(StepFailure)
        -> [UInt8]
    {
        switch (key, algorithm) {
        case (.secret(let secret), nil):
            return secret.authenticate(input)
        case (.privateKey(let key), let algorithm?):
            do { return try key.sign(input, algorithm) } catch { throw .key(error.description) }
        default:
            throw .key("the key does not fit the algorithm")  // refused when the configuration was read
        }
    }
}

extension Route.ResponseStep {
    /// Runs the answer's steps on `response` as it came; a failure is Cloak's 502 1401 (an answer
    /// it cannot use), and the caller never sees the sealed bytes.
    /// - Returns: the names of the steps that changed the answer.
    @discardableResult
    static func apply(_ steps: [Route.ResponseStep], to response: inout HTTPResponse) throws(CloakError) -> [String] {
        var ran: [String] = []
        for step in steps {
            switch step {
            case .jweDecrypt(let key):
                guard CompactJOSE.looksLikeJWE(response.body) else { continue }
                do {
                    let (plaintext, type) = try CompactJOSE.decrypt(response.body, with: key)
                    response.body = plaintext
                    // What described the sealed bytes does not describe these.
                    response.headers.removeAll {
                        $0.name.caseInsensitiveEquals("content-type") || $0.name.caseInsensitiveEquals("content-digest")
                            || $0.name.caseInsensitiveEquals("digest") || $0.name.caseInsensitiveEquals("signature")
                            || $0.name.caseInsensitiveEquals("signature-input")
                    }
                    response.headers.append(("Content-Type", type ?? "application/json"))
                    ran.append(step.name)
                } catch {
                    throw CloakError(.unexpectedResponseDataFormat, error.description)
                }
            }
        }
        return ran
    }
}
