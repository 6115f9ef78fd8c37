import CloakTesting
import Foundation

/// The independent side of the route-step tests (issue 49): Python's `http-message-signatures`
/// (RFC 9421), `jwcrypto` (JWE, JWS) and `cryptography` (RSA, HMAC), plus small references for
/// the forms without a library (CyberSource's draft-cavage HMAC, Mastercard's OAuth 1.0a with
/// the body hash, written here from RFC 5849, not from Cloak's code). Each check reads a request
/// as the Python upstream recorded it and answers JSON: `{"ok": true, …}` or `{"ok": false,
/// "why": …}`.
enum RouteStepVerifier {
    /// A request as the upstream got it, and what to check it with.
    static func check(
        _ kind: String, _ seen: TLSUpstream.Received, url: String, key: String, extra: [String: Any] = [:]
    ) throws -> [String: Any] {
        var spec: [String: Any] = [
            "kind": kind, "method": seen.method, "url": url, "headers": seen.headers.map { [$0.name, $0.value] },
            "body": seen.body, "key": key,
        ]
        spec.merge(extra) { _, new in new }
        let input = try JSONSerialization.data(withJSONObject: spec)
        return try TestPython.run(script, inputs: [Array(input)]) as? [String: Any] ?? [:]
    }

    /// A compact JWE of `plaintext` to the public key in `publicKeyPEM`, made by jwcrypto.
    static func jwe(_ plaintext: String, to publicKeyPEM: String) throws -> String {
        let spec: [String: Any] = ["kind": "make-jwe", "body": plaintext, "key": publicKeyPEM]
        let out = try TestPython.run(script, inputs: [Array(try JSONSerialization.data(withJSONObject: spec))])
        return (out as? [String: Any])?["jwe"] as? String ?? ""
    }

    static let script = #"""
        import base64, hashlib, hmac, json, sys, traceback, urllib.parse
        spec = json.load(open(sys.argv[1]))
        kind, key = spec["kind"], spec["key"]
        pairs = spec.get("headers", [])
        body = spec.get("body", "").encode("latin-1")
        def header(name):
            values = [v for k, v in pairs if k.lower() == name.lower()]
            return ", ".join(values) if values else None

        def check():
            if kind == "make-jwe":
                from jwcrypto import jwe, jwk
                k = jwk.JWK.from_pem(key.encode())
                token = jwe.JWE(body, protected=json.dumps({"alg": "RSA-OAEP-256", "enc": "A256GCM", "cty": "json"}))
                token.add_recipient(k)
                return {"ok": True, "jwe": token.serialize(compact=True)}
            if kind == "rfc9421":
                from http_message_signatures import HTTPMessageVerifier, HTTPSignatureKeyResolver, algorithms
                algorithm = {"hmac-sha256": algorithms.HMAC_SHA256, "rsa-pss-sha512": algorithms.RSA_PSS_SHA512,
                             "rsa-v1_5-sha256": algorithms.RSA_V1_5_SHA256,
                             "ecdsa-p256-sha256": algorithms.ECDSA_P256_SHA256,
                             "ed25519": algorithms.ED25519}[spec["algorithm"]]
                material = base64.b64decode(key) if spec["algorithm"] == "hmac-sha256" else key.encode()
                class Resolver(HTTPSignatureKeyResolver):
                    def resolve_public_key(self, key_id):
                        return material if key_id == spec["keyid"] else None
                class Headers:
                    def items(self): return [(k, v) for k, v in pairs]
                    def __iter__(self): return iter(dict.fromkeys(k for k, _ in pairs))
                    def __contains__(self, name): return header(name) is not None
                    def __getitem__(self, name): return header(name)
                class Message:
                    method = spec["method"]
                    url = spec["url"]
                    headers = Headers()
                result = HTTPMessageVerifier(signature_algorithm=algorithm, key_resolver=Resolver()).verify(Message())[0]
                digest = header("Content-Digest")
                expected = "sha-256=:" + base64.b64encode(hashlib.sha256(body).digest()).decode() + ":"
                return {"ok": digest is None or digest == expected, "why": "content-digest", "covered": list(result.covered_components),
                        "nonce": result.nonce, "label": result.label}
            if kind == "cavage":
                # CyberSource REST's HTTP signature: "name: value" lines for the listed headers,
                # (request-target) as "post /path", HMAC-SHA256 under the base64-decoded secret.
                fields = dict(part.strip().split("=", 1) for part in header("Signature").split(", "))
                fields = {k: v.strip('"') for k, v in fields.items()}
                lines = []
                for name in fields["headers"].split(" "):
                    if name == "(request-target)":
                        lines.append("(request-target): " + spec["method"].lower() + " " + spec["path"])
                    else:
                        lines.append(name + ": " + header(name))
                mac = hmac.new(base64.b64decode(key), "\n".join(lines).encode(), hashlib.sha256).digest()
                digest = "SHA-256=" + base64.b64encode(hashlib.sha256(body).digest()).decode()
                ok = (fields["keyid"] == spec["keyid"] and fields["algorithm"] == "HmacSHA256"
                      and hmac.compare_digest(base64.b64decode(fields["signature"]), mac)
                      and header("Digest") == digest)
                return {"ok": ok, "why": "cavage", "headers": fields["headers"], "date": header("Date")}
            if kind == "oauth1":
                from cryptography.hazmat.primitives import hashes, serialization
                from cryptography.hazmat.primitives.asymmetric import padding
                auth = header("Authorization")
                assert auth.startswith("OAuth ")
                params = {}
                for part in auth[6:].split(","):
                    k, v = part.strip().split("=", 1)
                    params[k] = urllib.parse.unquote(v.strip('"'))
                signature = base64.b64decode(params.pop("oauth_signature"))
                enc = lambda s: urllib.parse.quote(s, safe="~")
                url = urllib.parse.urlsplit(spec["url"])
                query = urllib.parse.parse_qsl(url.query, keep_blank_values=True)
                normalized = "&".join(sorted(enc(k) + "=" + enc(v) for k, v in list(params.items()) + query))
                host = url.hostname + ("" if url.port in (None, 443) else ":%d" % url.port)
                base = "&".join([spec["method"].upper(), enc("https://" + host + url.path), enc(normalized)])
                public = serialization.load_pem_public_key(key.encode())
                public.verify(signature, base.encode(), padding.PKCS1v15(), hashes.SHA256())
                ok = (params["oauth_body_hash"] == base64.b64encode(hashlib.sha256(body).digest()).decode()
                      and params["oauth_consumer_key"] == spec["consumer_key"]
                      and params["oauth_signature_method"] == "RSA-SHA256")
                return {"ok": ok, "why": "body hash or consumer key", "nonce": params["oauth_nonce"]}
            if kind == "jwe":
                from jwcrypto import jwe, jwk
                k = jwk.JWK.from_pem(key.encode())
                def open_one(text):
                    token = jwe.JWE()
                    token.deserialize(text, key=k)
                    return token.payload.decode("latin-1"), token.jose_header
                if spec.get("json"):
                    document = json.loads(body)
                    values = [open_one(document[name])[0] for name in spec["json"]]
                    return {"ok": True, "values": values, "document": document}
                plaintext, jose = open_one(body.decode())
                return {"ok": header("Content-Type") == "application/jose", "why": "content type",
                        "plaintext": plaintext, "header": jose}
            if kind == "jws":
                from jwcrypto import jwk, jws
                k = jwk.JWK.from_pem(key.encode())
                token = jws.JWS()
                token.deserialize(body.decode())
                token.verify(k, alg=spec["algorithm"])
                return {"ok": header("Content-Type") == "application/jose", "why": "content type",
                        "payload": token.payload.decode("latin-1"), "header": token.jose_header}
            if kind == "hmac_header":
                covered = b"\n".join([spec["method"].encode(), spec["path"].encode(), body])
                mac = hmac.new(base64.b64decode(key), covered, hashlib.sha256).hexdigest()
                return {"ok": header(spec["header"]) == mac, "why": "hmac"}
            return {"ok": False, "why": "unknown kind " + kind}

        try:
            print(json.dumps(check()))
        except Exception as e:
            print(json.dumps({"ok": False, "why": "%s: %s" % (type(e).__name__, e), "trace": traceback.format_exc()}))
        """#
}
