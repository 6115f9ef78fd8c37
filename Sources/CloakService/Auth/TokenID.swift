import CloakCore

/// The rules for a token's id, shared by the configuration reader (`auth.tokens`) and run-time
/// tokens. Pure, so the configuration fuzzer (scripts/fuzz config) builds them too.
package enum TokenID {
    /// Token ids: 1 to 64 of `A-Z a-z 0-9 - _ .`.
    package static func isValid(_ id: String) -> Bool {
        (1...64).contains(id.utf8.count)
            && id.utf8.allSatisfy {
                ($0 >= 48 && $0 <= 57) || ($0 | 0x20 >= 97 && $0 | 0x20 <= 122) || $0 == 45 || $0 == 95 || $0 == 46
            }
    }

    /// Whether a new token's id could be a value (review V, item 7): all digits, or nine or more
    /// digits in a row whatever the separators (what ``Redaction/scrub(_:limit:)`` takes out).
    /// Ids are logged, audited and searched as they are, so such an id is refused when it is
    /// made (at run time and in `auth.tokens`); ids already in the store stay readable.
    package static func looksLikeAValue(_ id: String) -> Bool {
        id.utf8.allSatisfy { $0 >= 48 && $0 <= 57 } || Redaction.scrub(id, limit: 64) != id
    }
}
