import CloakCore
import CloakCrypto
import Foundation

/// Storage class of a record: kept until deleted, or expiring after the volatile TTL.
package typealias StorageKind = TokenizationSettings.Storage

/// One stored value as the store holds it: encrypted, with every alias issued for it.
package struct StoredRecord: Sendable {
    package var id: String
    /// HMAC of the value under the fingerprint key; set for PERSISTENT records (deduplication).
    package var fingerprint: [UInt8]?
    package var keyID: String
    package var sealed: AESGCM.SealedBox
    package var storage: StorageKind
    package var classifiers: [String]
    /// Seconds since 1970.
    package var createdAt: Int64
    package var expiresAt: Int64?
    package var aliases: [IssuedAlias]
    /// Stored by an anonymous caller (no token with `aliases:create`): short-lived until a backend
    /// keeps it (`POST /aliases/keep`), and never found by a lookup.
    package var intent: Bool
    /// For an intent in a small format-preserving bucket: the bucket's tag, under which it holds
    /// one of the places anonymous callers may take (``AliasStore/reserveBucketSlot(_:limit:)``).
    package var bucket: [UInt8]?
    /// String keys to string values a token holder keeps with the record (in clear).
    package var metadata: [String: String]

    package init(
        id: String, fingerprint: [UInt8]?, keyID: String, sealed: AESGCM.SealedBox, storage: StorageKind,
        classifiers: [String], createdAt: Int64, expiresAt: Int64?, aliases: [IssuedAlias], intent: Bool = false,
        bucket: [UInt8]? = nil, metadata: [String: String] = [:]
    ) {
        self.metadata = metadata
        self.intent = intent
        self.bucket = bucket
        self.id = id
        self.fingerprint = fingerprint
        self.keyID = keyID
        self.sealed = sealed
        self.storage = storage
        self.classifiers = classifiers
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.aliases = aliases
    }
}

/// One alias of a record. Its identity is the format and, for card formats, whether it passes
/// Luhn: a `luhn: invalid` form and a Luhn-valid one get different aliases for the same card.
package struct IssuedAlias: Sendable, Equatable {
    package var alias: String
    package var format: AliasFormatName
    /// For card formats: whether the alias passes Luhn (always true for other formats).
    package var luhnValid: Bool
    /// HMAC binding the alias to its record (``Vault`` checks it before following the alias);
    /// empty until the vault signs it. Not part of equality.
    package var mac: [UInt8]

    package init(alias: String, format: AliasFormatName, luhnValid: Bool = true, mac: [UInt8] = []) {
        self.alias = alias
        self.format = format
        self.luhnValid = luhnValid || !AliasFormat.of(format).isCard
        self.mac = mac
    }

    package static func == (a: IssuedAlias, b: IssuedAlias) -> Bool {
        a.alias == b.alias && a.format == b.format && a.luhnValid == b.luhnValid
    }

    /// The format as a store keeps it: the name, with `;luhn=invalid` for Luhn-invalid card aliases.
    package var storedFormat: String { luhnValid ? format.rawValue : format.rawValue + ";luhn=invalid" }

    /// The format and Luhn variant from ``storedFormat``.
    package static func parseStoredFormat(_ text: String) -> (format: AliasFormatName, luhnValid: Bool)? {
        if text.hasSuffix(";luhn=invalid") {
            return AliasFormatName(rawValue: String(text.dropLast(";luhn=invalid".count))).map { ($0, false) }
        }
        return AliasFormatName(rawValue: text).map { ($0, true) }
    }

    /// An alias of a row written before the Luhn variant was recorded: a card alias without
    /// `;luhn=invalid` is Luhn-invalid exactly when its digits fail Luhn (stores use this once,
    /// when they sign old rows).
    package static func fromStore(alias: String, storedFormat: String, mac: [UInt8] = []) -> IssuedAlias? {
        guard let parsed = parseStoredFormat(storedFormat) else { return nil }
        var luhnValid = parsed.luhnValid
        if luhnValid, AliasFormat.of(parsed.format).isCard {
            luhnValid = Luhn.isValid(numerals: alias.utf8.filter { $0 >= 48 && $0 <= 57 }.map { $0 - 48 })
        }
        return IssuedAlias(alias: alias, format: parsed.format, luhnValid: luhnValid, mac: mac)
    }

    /// Whether this alias answers a request for `format` with that Luhn setting.
    package func matches(_ format: AliasFormatName, luhnValid: Bool) -> Bool {
        self.format == format && self.luhnValid == (luhnValid || !AliasFormat.of(format).isCard)
    }
}

/// A record as the Vault API shows it, value decrypted.
///
/// Holds the plain value, so its description is redacted.
package struct RevealedRecord: Sendable, CustomStringConvertible {
    package var sensitiveValue: Sensitive<String>
    package var value: String {
        get { sensitiveValue.value }
        set { sensitiveValue = Sensitive(newValue) }
    }
    package var aliases: [IssuedAlias]
    package var storage: StorageKind
    package var classifiers: [String]
    package var createdAt: Int64
    /// Seconds since 1970 when the record stops being found (nil: never).
    package var expiresAt: Int64?
    /// The record is an anonymous caller's intent (see ``StoredRecord/intent``).
    package var intent: Bool
    package var metadata: [String: String]
    /// The group this create stored the value in with the request's others (issue 76): set for
    /// callers who may reveal, and only in a create's answer.
    package var group: String?

    package init(
        value: String, aliases: [IssuedAlias], storage: StorageKind, classifiers: [String], createdAt: Int64,
        expiresAt: Int64? = nil, intent: Bool = false, metadata: [String: String] = [:]
    ) {
        self.metadata = metadata
        self.expiresAt = expiresAt
        self.intent = intent
        self.sensitiveValue = Sensitive(value)
        self.aliases = aliases
        self.storage = storage
        self.classifiers = classifiers
        self.createdAt = createdAt
    }

    package var description: String { "RevealedRecord(\(aliases.count) aliases, \(storage.rawValue), value redacted)" }

    /// The record's document, `{"value","aliases":[{"alias","format"}],"storage","classifiers",
    /// "created_at"}`, written straight into `writer` (the Vault API's answers).
    /// With `lifecycle` (reveals), `expires_at` is always written (null when none) and so is
    /// `metadata`; create answers keep the SDK's shape, with `expires_at` only when set.
    /// Without `includeValue` (a lookup's answer) the record is written without its value.
    package func write(into writer: inout JSONWriter, lifecycle: Bool = false, includeValue: Bool = true) {
        writer.beginObject()
        if includeValue { writer.member("value", value) }
        writer.key("aliases" as StaticString)
        writer.beginArray()
        for alias in aliases {
            writer.nextElement()
            writer.beginObject()
            writer.member("alias", alias.alias)
            writer.member("format", alias.format.rawValue)
            writer.endObject()
        }
        writer.endArray()
        writer.member("storage", storage.rawValue)
        writer.member("classifiers", classifiers)
        writer.member("created_at", Self.iso8601(createdAt))
        // Only a record that expires says when: the SDK's answer shape is kept for the others.
        if let expiresAt {
            writer.member("expires_at", Self.iso8601(expiresAt))
        } else if lifecycle {
            writer.key("expires_at" as StaticString)
            writer.writeNull()
        }
        if lifecycle {
            writer.key("metadata" as StaticString)
            Self.writeMetadata(metadata.filter { $0.key != Self.attributesKey }, into: &writer)
        }
        if let attributes {
            writer.key("attributes" as StaticString)
            writer.write(attributes.json)
        }
        writer.endObject()
    }

    /// The metadata key a card's attributes are kept under (issue 48): callers' metadata may not
    /// use the `cloak:` namespace.
    package static let attributesKey = "cloak:attributes"

    /// The record's card attributes (nil: none kept, or not attributes as Cloak writes them).
    package var attributes: CardAttributes? {
        guard let text = metadata[Self.attributesKey],
            let parsed = try? JSONParser().parse(Array(text.utf8))
        else { return nil }
        return CardAttributes(json: parsed)
    }

    /// `{"key":"value",…}` in key order.
    package static func writeMetadata(_ metadata: [String: String], into writer: inout JSONWriter) {
        writer.beginObject()
        for key in metadata.keys.sorted() {
            writer.key(key)
            writer.stringValue(metadata[key] ?? "")
        }
        writer.endObject()
    }

    /// Metadata as stored: a JSON object of strings.
    static func encodeMetadata(_ metadata: [String: String]) -> String? {
        guard !metadata.isEmpty else { return nil }
        var writer = JSONWriter()
        writeMetadata(metadata, into: &writer)
        return String(decoding: writer.takeBytes(), as: UTF8.self)
    }

    static func decodeMetadata(_ text: String?) -> [String: String] {
        guard let text, case let .object(members)? = try? JSONParser().parse(Array(text.utf8)) else { return [:] }
        var out: [String: String] = [:]
        for (key, value) in members { if case let .string(s) = value { out[key] = s } }
        return out
    }

    /// RFC 3339 in UTC, to the second.
    package static func iso8601(_ seconds: Int64) -> String {
        var t = time_t(seconds)
        var parts = tm()
        gmtime_r(&t, &parts)
        func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T\(two(parts.tm_hour)):"
            + "\(two(parts.tm_min)):\(two(parts.tm_sec))Z"
    }
}
