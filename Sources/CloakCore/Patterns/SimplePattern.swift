/// A native matcher for the simplest configured regexes: a sequence of single-character atoms
/// with quantifiers, such as `^\d{10}$`, `^\d{4,17}$` or `^[A-Z]{2}[0-9]+$`.
///
/// Atoms: `\d`, an escaped ASCII punctuation character, a plain ASCII literal, or a bracket class
/// of ASCII literals and ranges (optionally negated). Quantifiers: `?`, `*`, `+`, `{n}`, `{n,}`,
/// `{n,m}`. Optional `^` at the start and `$` at the end. Anything else (groups, alternation,
/// `.`, `\s`, `\w`, flags, lazy or possessive quantifiers) is not simple: ICU decides. It decides
/// ASCII input only; for ASCII, `\d` is exactly `[0-9]`. A test compares it with ICU.
struct SimplePattern: Sendable {
    struct Atom: Sendable {
        var members: [Bool]  // 128 entries
        var min: Int
        var max: Int
    }
    let atoms: [Atom]

    init?(source: String) {
        var b = Array(source.utf8)[...]
        guard !b.isEmpty, b.allSatisfy({ $0 < 0x80 }) else { return nil }
        if b.first == UInt8(ascii: "^") { b = b.dropFirst() }
        if b.last == UInt8(ascii: "$"), b.dropLast().last != UInt8(ascii: "\\") { b = b.dropLast() }
        var atoms: [Atom] = []
        while let c = b.popFirst() {
            var members = [Bool](repeating: false, count: 128)
            switch c {
            case UInt8(ascii: "\\"):
                guard let e = b.popFirst() else { return nil }
                if e == UInt8(ascii: "d") {
                    for d in UInt8(ascii: "0")...UInt8(ascii: "9") { members[Int(d)] = true }
                } else if Self.isEscapablePunctuation(e) {
                    members[Int(e)] = true
                } else {
                    return nil
                }
            case UInt8(ascii: "["):
                var negated = false
                if b.first == UInt8(ascii: "^") { negated = true; b = b.dropFirst() }
                if b.first == UInt8(ascii: ":") { return nil }  // a POSIX class to ICU
                var any = false
                while let m = b.popFirst(), m != UInt8(ascii: "]") {
                    guard m != UInt8(ascii: "\\"), m != UInt8(ascii: "["), m != UInt8(ascii: "&") else { return nil }
                    if b.first == UInt8(ascii: "-"), let hi = b.dropFirst().first, hi != UInt8(ascii: "]") {
                        guard m <= hi else { return nil }
                        for x in m...hi { members[Int(x)] = true }
                        b = b.dropFirst(2)
                    } else {
                        members[Int(m)] = true
                    }
                    any = true
                }
                guard any else { return nil }
                if negated { members = members.map { !$0 } }
            case UInt8(ascii: "("), UInt8(ascii: ")"), UInt8(ascii: "|"), UInt8(ascii: "."), UInt8(ascii: "?"),
                UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "{"), UInt8(ascii: "}"), UInt8(ascii: "^"),
                UInt8(ascii: "$"), UInt8(ascii: "]"), UInt8(ascii: "#"), UInt8(ascii: " "):
                return nil
            default:
                guard c >= 0x21, c < 0x7F else { return nil }
                members[Int(c)] = true
            }
            var atom = Atom(members: members, min: 1, max: 1)
            switch b.first {
            case UInt8(ascii: "?"): atom.min = 0; b = b.dropFirst()
            case UInt8(ascii: "*"): atom.min = 0; atom.max = Int.max; b = b.dropFirst()
            case UInt8(ascii: "+"): atom.max = Int.max; b = b.dropFirst()
            case UInt8(ascii: "{"):
                guard let close = b.firstIndex(of: UInt8(ascii: "}")) else { return nil }
                let inner = String(decoding: b[b.index(after: b.startIndex)..<close], as: UTF8.self)
                let parts = inner.split(separator: ",", omittingEmptySubsequences: false)
                guard parts.count == 1 || parts.count == 2, let lo = Int(parts[0]), lo <= 10_000 else { return nil }
                atom.min = lo
                if parts.count == 1 {
                    atom.max = lo
                } else if parts[1].isEmpty {
                    atom.max = Int.max
                } else {
                    guard let hi = Int(parts[1]), hi >= lo, hi <= 10_000 else { return nil }
                    atom.max = hi
                }
                b = b[b.index(after: close)...]
            default: break
            }
            // Lazy and possessive quantifiers are not simple.
            if let q = b.first,
                q == UInt8(ascii: "?") || q == UInt8(ascii: "+") || q == UInt8(ascii: "*")
                    || q == UInt8(ascii: "{")
            {
                return nil
            }
            atoms.append(atom)
        }
        guard !atoms.isEmpty else { return nil }
        self.atoms = atoms
    }

    private static func isEscapablePunctuation(_ c: UInt8) -> Bool {
        (0x21...0x2F).contains(c) || (0x3A...0x40).contains(c) || (0x5B...0x60).contains(c) || (0x7B...0x7E).contains(c)
    }

    /// Whole-string match of ASCII bytes.
    func wholeMatch(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        match(atom: 0, at: 0, bytes)
    }

    private func match(atom index: Int, at position: Int, _ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard index < atoms.count else { return position == bytes.count }
        let atom = atoms[index]
        var count = 0
        while count < atom.max, position + count < bytes.count, atom.members[Int(bytes[position + count])] {
            count += 1
        }
        guard count >= atom.min else { return false }
        // Greedy with backtracking, as ICU does.
        while count >= atom.min {
            if match(atom: index + 1, at: position + count, bytes) { return true }
            if count == 0 { break }
            count -= 1
        }
        return false
    }
}
