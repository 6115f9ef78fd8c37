import CloakCore
import Foundation

/// The check every forwarded path passes (inbound routes and both egress doors). Paths go on
/// still percent-encoded as the client sent them, so an encoded CR, LF, space, `?` or `/` cannot
/// change the upstream request line or target. Refused (1002): dot segments (`..`, `%2e%2e`,
/// and `..;x` that Tomcat reads as `..`), backslashes (`..\` on IIS), double encoding (`%252e`:
/// an upstream that decodes twice would see a dot segment), encoded control characters and a
/// leading `//`.
enum ForwardedPath {
    static func check(_ path: String) throws(CloakError) {
        // `//host/x` as a request target is an authority to servers that resolve targets against
        // a base URL: never sent (the upstream's own path `/` joined with it would make one).
        if path.utf8.starts(with: "//".utf8) {
            throw .malformed("the forwarded path starts with //")
        }
        // Most paths hold no escape: checked in one pass over their bytes, without decoding.
        if !path.utf8.contains(UInt8(ascii: "%")) {
            guard isSafePlain(path) else { throw Self.refused }
            return
        }
        guard let decoded = path.removingPercentEncoding else {
            throw .malformed("the forwarded path is not valid percent-encoding")
        }
        guard isSafe(path, decoded: decoded) else { throw Self.refused }
    }

    private static let refused = CloakError.malformed("the forwarded path has dot segments or control characters")

    /// A path without `%`: every byte a visible ASCII character but `\` and `#`, and no segment
    /// whose name (before a `;`) is `.` or `..`. What ``isSafe(_:decoded:)`` decides for such a
    /// path (`ForwardedPathTests` compares the two), in one pass and no allocation: it runs on
    /// every proxied request.
    static func isSafePlain(_ path: String) -> Bool {
        var dots = 0  // the segment name's dots so far; -1 once it has another byte
        var inParameters = false  // past the segment's first `;`
        for b in path.utf8 {
            if b < 0x21 || b > 0x7E || b == UInt8(ascii: "\\") || b == UInt8(ascii: "#") { return false }
            if b == UInt8(ascii: "/") {
                if dots == 1 || dots == 2 { return false }
                dots = 0
                inParameters = false
            } else if inParameters {
                continue
            } else if b == UInt8(ascii: ";") {
                inParameters = true
            } else if b == UInt8(ascii: "."), dots >= 0 {
                dots += 1
            } else {
                dots = -1
            }
        }
        return dots != 1 && dots != 2
    }

    /// Any path (`decoded`: its percent-decoding): decoded, no control character, backslash or
    /// dot segment; as sent, no `%25` (double encoding), space, `#` or byte outside visible ASCII.
    static func isSafe(_ path: String, decoded: String) -> Bool {
        let unsafe =
            decoded.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F || $0 == "\\" }
            || decoded.split(separator: "/", omittingEmptySubsequences: false).contains { segment in
                let name = segment.prefix { $0 != ";" }
                return name == ".." || name == "."
            }
            || path.lowercased().contains("%25")
            || path.unicodeScalars.contains { $0 == " " || $0 == "#" || $0.value < 0x21 || $0.value > 0x7E }
        return !unsafe
    }
}
