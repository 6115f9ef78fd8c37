/// Scrubbing of client-controlled text that must be echoed or logged.
public enum Redaction {
    /// Whether ``scrub(_:limit:)`` would return `text` unchanged because it cannot hold a number:
    /// ASCII, at most `limit` bytes, fewer than nine digits in all. One pass over the bytes (the
    /// access log scrubs every request's path).
    static func isClean(_ text: String, limit: Int = 256) -> Bool {
        var text = text
        return text.withUTF8 { utf8 in
            guard utf8.count <= limit else { return false }
            var digits = 0
            for byte in utf8 {
                if byte >= 0x80 { return false }
                if byte &- 48 < 10 { digits &+= 1 }
            }
            return digits < 9
        }
    }

    /// Replaces every run of digits (with any separator that is not a letter inside it) that holds nine or more
    /// digits with `[redacted]`: card numbers, SSNs and account numbers cannot pass, whatever
    /// their separators. Also cuts the text to `limit` characters.
    public static func scrub(_ text: String, limit: Int = 256) -> String {
        if isClean(text, limit: limit) { return text }
        var out = ""
        var run = ""
        var runDigits = 0
        var separators = ""  // after the run's last digit: part of the run only if a digit follows
        func flush() {
            out += (runDigits >= 9 ? "[redacted]" : run) + separators
            run = ""
            runDigits = 0
            separators = ""
        }
        // Scrub a little past the limit before cutting, so a number across the cut is still caught.
        for ch in text.prefix(limit + 32) {
            if ch.isNumber {
                run += separators
                separators = ""
                run.append(ch)
                runDigits += 1
            } else if !run.isEmpty, !ch.isLetter {
                // Any separator, ASCII or not (space, -, ., /, a no-break space, an ideographic
                // space…): a digit run with a U+00A0 inside is still one card number.
                separators.append(ch)
            } else {
                flush()
                out.append(ch)
            }
        }
        flush()
        return String(out.prefix(limit))
    }
}
