/// A mask applied while typing (issue 44): one edit of a masked field's text at a time.
///
/// The seed's mask "restricts and fills user input" by position, and Basis Theory shows it as the
/// user types. The text before the edit and the inserted characters are placed in the mask in
/// turn, as ``InputMask/apply(_:)`` places a submitted value: a character the position's pattern
/// refuses is dropped, a literal is filled in when a character after it is placed (a typed literal
/// takes its own position), and nothing goes past the mask's end. What this adds for an edit:
/// inserted characters that would push what followed the edit past the end are the ones dropped
/// (the text after the caret keeps its place, as a card number's digits do), a deletion of
/// literals only (a backspace over `)`) deletes the character before them, no literal trails a
/// deletion, and the caret goes right after what the edit inserted.
///
/// Every text this gives is its own ``apply(_:)`` input: the server masks it again when it is
/// sent and computes the same state from it. Cloak Elements' frames run the same steps
/// (`rules.js` `editMask`); `Tests/Fixtures/collect-cases.json` (`maskEdits`) is the case table
/// both are held to.
extension InputMask {
    /// Applies one edit to a masked field's text.
    ///
    /// `text` is what an earlier edit gave (or ""): its characters sit at the mask's positions
    /// in order. Offsets count UTF-16 code units, as `NSRange` and `UITextInput` do; a range
    /// inside a character is widened to whole characters.
    ///
    /// - Parameters:
    ///   - text: the field's text before the edit.
    ///   - selection: the range of `text` the edit replaces, clamped to it: empty for typing at
    ///     the caret, the deleted character's range for a backspace.
    ///   - replacement: what replaces the range ("" for a deletion).
    /// - Returns: the text to show, and the caret (a UTF-16 offset of that text).
    ///
    /// ```swift
    /// let digit = InputMask.Position.pattern(try RegexPattern(#"\d"#))
    /// let phone = InputMask([.literal("("), digit, digit, digit, .literal(")"),
    ///                        digit, digit, digit, .literal("-"), digit, digit, digit, digit])
    /// phone.edit(text: "", selection: 0..<0, replacement: "5551234567")   // ("(555)123-4567", 13)
    /// phone.edit(text: "(555)1", selection: 4..<5, replacement: "")       // ("(551", 3)
    /// ```
    public func edit(text: String, selection: Range<Int>, replacement: String) -> (text: String, caret: Int) {
        let cells = Array(text)
        var offsets = [0]
        offsets.reserveCapacity(cells.count + 1)
        for c in cells { offsets.append(offsets[offsets.count - 1] + c.utf16.count) }
        let total = offsets[cells.count]
        let lower = min(max(selection.lowerBound, 0), total)
        let upper = min(max(selection.upperBound, lower), total)
        // Whole characters: the lower end rounds down, a non-empty range's upper end rounds up.
        var a = 0
        while a < cells.count, offsets[a + 1] <= lower { a += 1 }
        var b = a
        if upper > lower {
            while b < cells.count, offsets[b] < upper { b += 1 }
        }
        let isDeletion = replacement.isEmpty && a < b
        // A deletion of literals only (a backspace over a literal) means the character before them.
        if isDeletion, (a..<b).allSatisfy(isLiteral), let p = (0..<a).last(where: { !isLiteral($0) }) {
            a = p
        }
        // What followed the edit; only its placed characters count for room, not its literals.
        let after = (b..<cells.count).map { (character: cells[$0], counts: !isLiteral($0)) }

        var out: [Character] = []
        var next = 0
        func put(_ c: Character, at p: Int) {
            while out.count < p, case let .literal(l) = positions[out.count] { out.append(l) }
            out.append(c)
            next = p + 1
        }
        func feed(_ c: Character) -> Bool {
            switch place(c, from: next) {
            case nil: return false
            case let .refused(p)?: next = p
            case let .placed(p)?: put(c, at: p)
            }
            return true
        }
        for c in cells[..<a] {
            guard feed(c) else { break }
        }
        let roomBefore = room(for: after, from: next)
        insertion: for c in replacement {
            guard let placement = place(c, from: next) else { break }
            switch placement {
            case let .refused(p):
                next = p
            case let .placed(p):
                // What followed the edit keeps its place: input past the end is what is dropped.
                guard room(for: after, from: p + 1) >= roomBefore else { break insertion }
                put(c, at: p)
            }
        }
        let insertedEnd = out.reduce(0) { $0 + $1.utf16.count }
        for (c, _) in after {
            guard feed(c) else { break }
        }
        if isDeletion {
            while let last = out.indices.last, isLiteral(last) { out.removeLast() }
        }
        let shown = String(out)
        return (shown, min(shown.utf16.count, max(insertedEnd, offsets[a])))
    }

    /// Where a character goes when the mask is filled up to position `start`.
    private enum Placement {
        /// At this position: a pattern that takes it, or a literal it equals (the literals
        /// before it are filled in).
        case placed(Int)
        /// The first pattern after the literals (if any) refuses it: filling goes on there.
        case refused(Int)
    }

    /// `nil` when the mask is full from `start` on.
    private func place(_ c: Character, from start: Int) -> Placement? {
        var p = start
        while p < positions.count {
            switch positions[p] {
            case let .literal(l):
                if c == l { return .placed(p) }
            case let .pattern(pattern):
                return pattern.wholeMatch(String(c)) ? .placed(p) : .refused(p)
            }
            p += 1
        }
        return nil
    }

    /// How many of `characters` that count are placed when filling goes on from `start`.
    private func room(for characters: [(character: Character, counts: Bool)], from start: Int) -> Int {
        var next = start
        var placed = 0
        for (c, counts) in characters {
            switch place(c, from: next) {
            case nil: return placed
            case let .refused(p)?: next = p
            case let .placed(p)?:
                next = p + 1
                if counts { placed += 1 }
            }
        }
        return placed
    }

    private func isLiteral(_ index: Int) -> Bool {
        guard index < positions.count, case .literal = positions[index] else { return false }
        return true
    }
}
