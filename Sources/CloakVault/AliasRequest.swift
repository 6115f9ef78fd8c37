import CloakCore

/// One value to alias, as the Vault API and form tokenization ask for it. The value travels
/// wrapped, so the request prints as `AliasRequest(UUID, PERSISTENT, value [redacted])`.
package struct AliasRequest: Sendable, CustomStringConvertible {
    package var sensitiveValue: Sensitive<String>
    package var format: AliasFormatName
    package var storage: StorageKind
    package var classifiers: [String]
    /// For card formats: whether the alias passes Luhn.
    package var luhnValid: Bool
    /// The new record's lifetime in seconds (nil: VOLATILE's default, or none for PERSISTENT).
    /// A create never changes an existing record's.
    package var ttlSeconds: Int?
    /// Kept in clear beside the record (the Vault API refuses digit runs of nine or more).
    package var metadata: [String: String] = [:]
    /// The name the value has in the group the create's values form (issue 76: a form's field,
    /// an import's column, a `POST /aliases` item's `field`); nil: it joins none (a card's
    /// security code never does). See ``Vault/createAliases(_:caller:completion:)``.
    package var groupField: String?

    package var value: String {
        get { sensitiveValue.value }
        set { sensitiveValue = Sensitive(newValue) }
    }

    package init(
        value: String, format: AliasFormatName, storage: StorageKind, classifiers: [String] = [], luhnValid: Bool = true
    ) {
        self.sensitiveValue = Sensitive(value)
        self.format = format
        self.storage = storage
        self.classifiers = classifiers
        self.luhnValid = luhnValid
    }

    package var description: String { "AliasRequest(\(format.rawValue), \(storage.rawValue), value \(sensitiveValue))" }
}

/// Who creates aliases, which decides what the answer may show and what may be asked.
package struct AliasCaller: Sendable {
    /// The caller may reveal values: an answer for a value already stored shows the stored
    /// record (its first `created_at`, its classifiers, every alias). Anyone else gets only what
    /// it asked for, stamped with the request's time, so the answer cannot tell whether the value
    /// was new (no existence oracle).
    package var mayReveal: Bool
    /// The caller has no token (an open tokenize call). Its aliases are neither deduplicated nor
    /// deterministic: their free characters are drawn at random and every value gets a new record, so
    /// whoever holds an alias cannot find its value by submitting candidates and comparing the
    /// answers. And it may not create aliases in a small alias space (under a million, drawn at
    /// random): anonymous requests could otherwise fill a BIN + last-four bucket.
    package var anonymous: Bool

    package init(mayReveal: Bool, anonymous: Bool) {
        self.mayReveal = mayReveal
        self.anonymous = anonymous
    }

    /// Whether the caller gets the deterministic, deduplicated alias of a value.
    var deterministic: Bool { !anonymous }

    /// A trusted in-process caller (tools and tests): sees stored records.
    package static let trusted = AliasCaller(mayReveal: true, anonymous: false)
    /// A caller without a token.
    package static let anonymous = AliasCaller(mayReveal: false, anonymous: true)
}
