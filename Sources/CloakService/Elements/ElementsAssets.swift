import CloakCrypto
import Foundation

/// The files of Cloak Elements, compiled into the binary (`Elements/Assets`, through
/// `EmbeddedAssets`): the page's loader, the frames' documents, scripts and style. Nothing is
/// read from disk at run time, so what a binary serves, and the loader's integrity value, change
/// only with the binary.
package enum ElementsAssets {
    struct Asset: Sendable {
        enum Kind: Sendable { case script, style, document, image }
        let kind: Kind
        let bytes: [UInt8]
        let etag: String

        init(_ kind: Kind, _ bytes: [UInt8]) {
            self.kind = kind
            self.bytes = bytes
            self.etag = ElementsAssets.etag(for: bytes)
        }

        var contentType: String {
            switch kind {
            case .script: return "text/javascript; charset=utf-8"
            case .style: return "text/css; charset=utf-8"
            case .document: return "text/html; charset=utf-8"
            case .image: return "image/svg+xml"
            }
        }
    }

    /// By the name they are served under: `/elements/v1/<name>`.
    static let byName: [String: Asset] = EmbeddedAssets.elements()

    /// A strong validator for `bytes`: the first 128 bits of their SHA-256, quoted.
    static func etag(for bytes: [UInt8]) -> String {
        "\"" + Digest.sha256(bytes).prefix(16).map { String(format: "%02x", $0) }.joined() + "\""
    }

    /// The loader's bytes, as `GET /elements/v1/cloak.js` serves them.
    package static var loader: [UInt8] { byName["cloak.js"]?.bytes ?? [] }

    /// The loader's Subresource Integrity value, for `<script integrity="…">`
    /// (`cloak elements integrity`).
    package static var loaderIntegrity: String { "sha384-" + Data(Digest.sha384(loader)).base64EncodedString() }
}
