/// A regex that is one bracketed class of plain ASCII characters and ranges, such as `[()-]` or
/// `[ .-]`: what Basis Theory transforms typically strip. Replacing its matches in ASCII input
/// needs no regex engine; anything else goes to ICU (a test compares the two).
struct NativeCharacterClass: Sendable {
    private let members: [Bool]  // indexed by ASCII byte

    init?(source: String) {
        let b = Array(source.utf8)
        guard b.count >= 3, b.first == UInt8(ascii: "["), b.last == UInt8(ascii: "]") else { return nil }
        let body = Array(b[1..<(b.count - 1)])
        // `[:digit:]` and friends are POSIX classes to ICU, not sets of characters.
        guard !body.isEmpty, body[0] != UInt8(ascii: "^"), body[0] != UInt8(ascii: ":"),
            body.allSatisfy({
                $0 >= 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\\") && $0 != UInt8(ascii: "[")
                    && $0 != UInt8(ascii: "]") && $0 != UInt8(ascii: "&")
            })
        else { return nil }
        var members = [Bool](repeating: false, count: 128)
        var i = 0
        while i < body.count {
            if i + 2 < body.count, body[i + 1] == UInt8(ascii: "-") {
                guard body[i] <= body[i + 2] else { return nil }
                for c in body[i]...body[i + 2] { members[Int(c)] = true }
                i += 3
            } else {
                members[Int(body[i])] = true
                i += 1
            }
        }
        self.members = members
    }

    /// `nil` when the input or the template is not plain ASCII text.
    func replacingMatches(in input: String, with template: String) -> String? {
        var copy = input, replacement = template
        return copy.withUTF8 { bytes in
            replacement.withUTF8 { template -> String? in
                guard !template.contains(where: { $0 == UInt8(ascii: "$") || $0 == UInt8(ascii: "\\") || $0 >= 0x80 }),
                    bytes.allSatisfy({ $0 < 0x80 })
                else { return nil }
                // Each input byte stays or becomes the template.
                return String(unsafeUninitializedCapacity: bytes.count * max(1, template.count)) { out in
                    var written = 0
                    for c in bytes {
                        if members[Int(c)] {
                            for t in template { out[written] = t; written += 1 }
                        } else {
                            out[written] = c
                            written += 1
                        }
                    }
                    return written
                }
            }
        }
    }
}
