import CloakCore

/// The `X-Request-Id` a response carries and the log records.
enum RequestID {
    /// Letters, digits, `-`, `_` and `.`, at most 64, and no run of nine or more digits (a card
    /// number or SSN sent as an id is never echoed or logged): a UUID or a short token.
    static func isWellFormed(_ id: String) -> Bool {
        guard !id.isEmpty, id.utf8.count <= 64 else { return false }
        var digits = 0
        for b in id.utf8 {
            let isDigit = b >= 48 && b <= 57
            guard isDigit || (b | 0x20 >= 97 && b | 0x20 <= 122) || b == 45 || b == 95 || b == 46 else { return false }
            digits = isDigit ? digits + 1 : 0
            if digits >= 9 { return false }
        }
        // Nine digits with separators between them (4111-1111-1111-1111) are a number too.
        return Redaction.scrub(id, limit: 64) == id
    }

    /// `prefix` followed by `counter` in lowercase hexadecimal, in one allocation.
    static func make(prefix: String, counter: UInt64) -> String {
        var digits = 1
        while digits < 16, counter >> (4 * UInt64(digits)) != 0 { digits += 1 }
        var prefix = prefix
        return prefix.withUTF8 { head in
            String(unsafeUninitializedCapacity: head.count + digits) { out in
                _ = out.initialize(from: head)
                let hex: StaticString = "0123456789abcdef"
                for i in 0..<digits {
                    out[head.count + digits - 1 - i] = hex.utf8Start[Int(counter >> (4 * UInt64(i)) & 0xF)]
                }
                return head.count + digits
            }
        }
    }
}
