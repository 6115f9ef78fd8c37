import CloakCore
import Foundation

/// The check every forwarded path passes (inbound routes and both egress doors). Paths go on
/// still percent-encoded as the client sent them, so an encoded CR, LF, space, `?` or `/` cannot
/// change the upstream request line or target. Refused (1002): dot segments (`..`, `%2e%2e`,
/// and `..;x` that Tomcat reads as `..`), backslashes (`..\` on IIS), double encoding (`%252e`:
/// an upstream that decodes twice would see a dot segment) and encoded control characters.
enum ForwardedPath {
    static func check(_ path: String) throws(CloakError) {
        // Most paths hold no escape: checked on their bytes, without decoding.
        if !path.utf8.contains(UInt8(ascii: "%")) {
            let refused =
                path.utf8.contains { $0 < 0x21 || $0 > 0x7E || $0 == UInt8(ascii: "\\") || $0 == UInt8(ascii: "#") }
                || path.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).contains { segment in
                    let name = segment.prefix { $0 != UInt8(ascii: ";") }
                    return (name.count == 1 || name.count == 2) && name.allSatisfy { $0 == UInt8(ascii: ".") }
                }
            guard !refused else { throw .malformed("the forwarded path has dot segments or control characters") }
            return
        }
        guard let decoded = path.removingPercentEncoding else {
            throw .malformed("the forwarded path is not valid percent-encoding")
        }
        let unsafe =
            decoded.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F || $0 == "\\" }
            || decoded.split(separator: "/", omittingEmptySubsequences: false).contains { segment in
                let name = segment.prefix { $0 != ";" }
                return name == ".." || name == "."
            }
            || path.lowercased().contains("%25")
            || path.unicodeScalars.contains { $0 == " " || $0 == "#" || $0.value < 0x21 || $0.value > 0x7E }
        guard !unsafe else { throw .malformed("the forwarded path has dot segments or control characters") }
    }
}
