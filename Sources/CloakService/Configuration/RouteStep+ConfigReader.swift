import CloakCore
import CloakCrypto
import CloakHTTP

extension Route.Step {
    /// The keys that make an item of a `request:` list a step, not an operation.
    static let names: Set<String> = ["digest", "http_signature", "oauth1_body_hash", "jwe", "jws", "hmac_header"]

    /// Reads one step (`name` is its key); every problem is reported at its YAML path, a key
    /// that does not load or cannot do the algorithm among them.
    static func read(_ name: String, _ node: ConfigNode, at p: String, _ r: ConfigReader) -> Self? {
        switch name {
        case "digest":
            guard let m = r.mapping(node, at: p, allowed: ["header"]) else { return nil }
            let header = r.string(m["header"], at: "\(p).header") ?? "Content-Digest"
            guard let digest = DigestHeader(rawValue: header) else {
                r.issue("\(p).header", "expected Content-Digest or Digest", m["header"])
                return nil
            }
            return .digest(digest)

        case "http_signature":
            guard
                let m = r.mapping(
                    node, at: p, allowed: ["scheme", "algorithm", "key", "keyid", "components", "nonce"])
            else { return nil }
            let scheme = r.string(m["scheme"], at: "\(p).scheme") ?? "rfc9421"
            let keyID = r.string(m["keyid"], at: "\(p).keyid")
            if keyID == nil { r.issue("\(p).keyid", "is required: the provider finds the key by it") }
            if let keyID { checkQuotable(keyID, at: "\(p).keyid", r) }
            let components = r.strings(m["components"], at: "\(p).components") ?? []
            if components.isEmpty { r.issue("\(p).components", "lists what the signature covers: at least one") }
            if Set(components).count != components.count { r.issue("\(p).components", "names a component twice") }
            let algorithmName = r.string(m["algorithm"], at: "\(p).algorithm")
            switch scheme {
            case "rfc9421":
                for (i, c) in components.enumerated() where !rfc9421Components.contains(c) && !isHeaderName(c) {
                    r.issue(
                        "\(p).components[\(i)]",
                        "expected a lowercase header name or one of \(rfc9421Components.sorted().joined(separator: ", "))"
                    )
                }
                guard let algorithmName else {
                    r.issue(
                        "\(p).algorithm",
                        "is required (\(MessageSignature.Algorithm.allCases.map(\.rawValue).joined(separator: ", ")))")
                    return nil
                }
                guard let algorithm = MessageSignature.Algorithm(rawValue: algorithmName) else {
                    r.issue(
                        "\(p).algorithm",
                        "expected one of \(MessageSignature.Algorithm.allCases.map(\.rawValue).joined(separator: ", "))",
                        m["algorithm"])
                    return nil
                }
                let nonce = m["nonce"].flatMap { r.bool($0, at: "\(p).nonce") } ?? false
                guard let key = readKey(m["key"], at: "\(p).key", for: algorithm.signature, r), let keyID else {
                    return nil
                }
                return .httpSignature(
                    MessageSignature(algorithm: algorithm, key: key, keyID: keyID, components: components, nonce: nonce)
                )
            case "draft-cavage":
                if m["nonce"] != nil { r.issue("\(p).nonce", "draft-cavage signatures carry no nonce") }
                for (i, c) in components.enumerated() where c != "(request-target)" && !isHeaderName(c) {
                    r.issue("\(p).components[\(i)]", "expected a lowercase header name or (request-target)")
                }
                if let algorithmName, algorithmName != "HmacSHA256" {
                    r.issue("\(p).algorithm", "draft-cavage signatures are HmacSHA256 here (what CyberSource checks)")
                }
                guard let key = readKey(m["key"], at: "\(p).key", for: nil, r), let keyID else { return nil }
                return .cavageSignature(CavageSigning(key: key, keyID: keyID, components: components))
            default:
                r.issue("\(p).scheme", "expected rfc9421 (the default) or draft-cavage", m["scheme"])
                return nil
            }

        case "oauth1_body_hash":
            guard let m = r.mapping(node, at: p, allowed: ["consumer_key", "key"]) else { return nil }
            let consumerKey = r.string(m["consumer_key"], at: "\(p).consumer_key")
            if consumerKey?.isEmpty ?? true { r.issue("\(p).consumer_key", "is required") }
            if let consumerKey { checkQuotable(consumerKey, at: "\(p).consumer_key", r) }
            guard let key = readKey(m["key"], at: "\(p).key", for: .rsaPKCS1SHA256, r), let consumerKey,
                !consumerKey.isEmpty
            else { return nil }
            return .oauth1BodyHash(OAuth1Signing(consumerKey: consumerKey, key: key))

        case "jwe":
            guard let m = r.mapping(node, at: p, allowed: ["key", "kid", "json"]) else { return nil }
            var json: [JSONPath] = []
            for (i, text) in (r.strings(m["json"], at: "\(p).json") ?? []).enumerated() {
                do { json.append(try JSONPath(text)) } catch { r.issue("\(p).json[\(i)]", error.description) }
            }
            let kid = r.string(m["kid"], at: "\(p).kid")
            if let kid { checkQuotable(kid, at: "\(p).kid", r) }
            guard let key = readKey(m["key"], at: "\(p).key", for: nil, public: true, r) else { return nil }
            guard case .publicKey(let publicKey) = key, publicKey.kind == .rsa, publicKey.bits >= 2048 else {
                r.issue(
                    "\(p).key", "RSA-OAEP-256 encrypts to the provider's RSA public key (2048 bits or more): \(key)",
                    m["key"])
                return nil
            }
            return .jwe(JWEEncryption(key: publicKey, keyID: kid, json: json))

        case "jws":
            guard let m = r.mapping(node, at: p, allowed: ["algorithm", "key", "kid"]) else { return nil }
            let name = r.string(m["algorithm"], at: "\(p).algorithm") ?? ""
            guard let algorithm = JWSSigning.Algorithm(rawValue: name) else {
                r.issue("\(p).algorithm", "expected RS256, ES256 or PS256", m["algorithm"])
                return nil
            }
            let kid = r.string(m["kid"], at: "\(p).kid")
            if let kid { checkQuotable(kid, at: "\(p).kid", r) }
            guard let key = readKey(m["key"], at: "\(p).key", for: algorithm.signature, r) else { return nil }
            return .jws(JWSSigning(algorithm: algorithm, key: key, keyID: kid))

        case "hmac_header":
            guard let m = r.mapping(node, at: p, allowed: ["key", "header", "encoding", "parts"]) else { return nil }
            let header = r.string(m["header"], at: "\(p).header")
            if let header {
                if !HTTPSyntax.isToken(header) {
                    r.issue("\(p).header", "is not a header name", m["header"])
                } else if ["host", "content-length", "transfer-encoding", "connection"].contains(header.lowercased()) {
                    r.issue("\(p).header", "\(header) frames the message; the MAC goes in a header of its own")
                }
            } else {
                r.issue("\(p).header", "is required: the header the MAC goes in")
            }
            let encodingName = r.string(m["encoding"], at: "\(p).encoding") ?? "hex"
            let encoding = HMACHeader.Encoding(rawValue: encodingName)
            if encoding == nil { r.issue("\(p).encoding", "expected hex or base64", m["encoding"]) }
            var parts: [HMACHeader.Part] = []
            for (i, text) in (r.strings(m["parts"], at: "\(p).parts") ?? ["body"]).enumerated() {
                switch text {
                case "body": parts.append(.body)
                case "method": parts.append(.method)
                case "path": parts.append(.path)
                default:
                    if text.hasPrefix("header:"), HTTPSyntax.isToken(String(text.dropFirst(7))) {
                        parts.append(.header(String(text.dropFirst(7))))
                    } else {
                        r.issue("\(p).parts[\(i)]", "expected body, method, path or header:NAME")
                    }
                }
            }
            if parts.isEmpty { r.issue("\(p).parts", "lists what the MAC covers: at least one") }
            guard let key = readKey(m["key"], at: "\(p).key", for: nil, r), let header, let encoding else {
                return nil
            }
            guard case .secret(let secret) = key else { return nil }  // readKey refused any other
            return .hmacHeader(HMACHeader(key: secret, header: header, encoding: encoding, parts: parts))

        default:
            return nil
        }
    }

    /// A name written into a quoted header parameter (`keyid="…"`): printable ASCII without `"`
    /// or `\\`, which the forms it goes in escape differently or not at all.
    private static func checkQuotable(_ text: String, at p: String, _ r: ConfigReader) {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F && $0 != 0x22 && $0 != 0x5C }) else {
            r.issue(p, "expected printable ASCII without \" or \\ (it is written into a header)")
            return
        }
    }

    /// The derived components Cloak signs (RFC 9421 2.2).
    static let rfc9421Components: Set<String> = ["@method", "@target-uri", "@authority", "@path", "@query"]

    private static func isHeaderName(_ text: String) -> Bool {
        !text.isEmpty && HTTPSyntax.isToken(text) && text == text.lowercased()
    }

    /// Loads the key at `p` and checks it fits: `algorithm` nil wants an HMAC secret (`env:`),
    /// or with `public` a public key (`file:`); otherwise a private key that can do `algorithm`.
    static func readKey(
        _ node: ConfigNode?, at p: String, for algorithm: SignatureAlgorithm?, public wantsPublic: Bool = false,
        signs: Bool = true, _ r: ConfigReader
    ) -> StepKey? {
        guard let text = r.string(node, at: p) else {
            if node == nil { r.issue(p, "is required (file:PATH, pkcs11:URI or env:NAME)") }
            return nil
        }
        let key: StepKey
        do { key = try StepKey.load(text, environment: r.environment) } catch {
            r.issue(p, error.description, node)
            return nil
        }
        switch (key, algorithm) {
        case (.secret, nil) where !wantsPublic:
            return key
        case (.publicKey, nil) where wantsPublic:
            return key
        case (.privateKey(let privateKey), let algorithm?):
            if let refusal = privateKey.refusal(for: algorithm) {
                r.issue(p, refusal, node)
                return nil
            }
            // One signature now, so a key the token will not use this way (no CKA_SIGN, a
            // mechanism it lacks) is refused here rather than on the first request.
            if signs {
                do { _ = try privateKey.sign(Array("cloak: does this key sign".utf8), algorithm) } catch {
                    r.issue(p, "the key does not sign with this algorithm: \(error.description)", node)
                    return nil
                }
            }
            return key
        default:
            let wanted =
                wantsPublic
                ? "the provider's public key (file: a PEM public key or certificate)"
                : algorithm == nil
                    ? "an HMAC secret (env:NAME)" : "a private key (file: a PEM private key, or pkcs11:)"
            r.issue(p, "is \(key); this step needs \(wanted)", node)
            return nil
        }
    }
}

extension Route.ResponseStep {
    /// Reads `{jwe_decrypt: {key}}`: Cloak's private RSA key (`file:` or `pkcs11:`).
    static func read(_ node: ConfigNode, at p: String, _ r: ConfigReader) -> Self? {
        guard let m = r.mapping(node, at: p, allowed: ["key"]) else { return nil }
        // An RSA key of 2048 bits or more (the kind check of an RSA algorithm), never made to sign.
        guard let key = Route.Step.readKey(m["key"], at: "\(p).key", for: .rsaPKCS1SHA256, signs: false, r),
            case .privateKey(let privateKey) = key
        else { return nil }
        return .jweDecrypt(privateKey)
    }
}
