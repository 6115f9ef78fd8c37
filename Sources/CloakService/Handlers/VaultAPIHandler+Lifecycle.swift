import CloakCore
import CloakVault

/// A token holder's per-record lifecycle on the Vault API: `ttl_s` and `metadata` on
/// `POST /aliases` items (a create never changes an existing record) and on
/// `PUT /aliases/{alias}`, which also takes `classifiers`.
extension VaultAPIHandler {
    /// What a `PUT` changes; nil members stay as they are.
    struct RecordChange: Sendable {
        var classifiers: [String]?
        var metadata: [String: String]?
        var ttlSeconds: Int?
    }

    /// The longest lifetime a record may be given: ten years.
    static let maxTTLSeconds = 315_360_000

    /// `{"data":{"classifiers"?, "metadata"?, "ttl_s"?}}` with at least one member.
    static func parseUpdate(_ body: JSONValue) throws(CloakError) -> RecordChange {
        guard case let .object(top) = body, top.count == 1, top[0].key == "data", case let .object(data) = top[0].value,
            !data.isEmpty
        else { throw .malformed(#"expected {"data":{"classifiers"?:[…],"metadata"?:{…},"ttl_s"?:seconds}}"#) }
        var change = RecordChange()
        var seen = Set<String>()
        for (key, v) in data {
            guard seen.insert(key).inserted else {
                throw .malformed("data has \"\(Redaction.scrub(key, limit: 64))\" twice")
            }
            switch key {
            case "classifiers": change.classifiers = try parseClassifiers(v, at: "data.classifiers")
            case "metadata": change.metadata = try parseMetadata(v, at: "data.metadata")
            case "ttl_s": change.ttlSeconds = try parseTTL(v, at: "data.ttl_s")
            default:
                throw .malformed(
                    "data has an unknown member \"\(Redaction.scrub(key, limit: 64))\"; expected classifiers, metadata, ttl_s"
                )
            }
        }
        return change
    }

    /// 1 s to ten years.
    static func parseTTL(_ v: JSONValue, at: String) throws(CloakError) -> Int {
        guard case let .number(text) = v, let n = Int(text), n >= 1, n <= maxTTLSeconds else {
            throw .malformed("\(at) must be a whole number of seconds from 1 to \(maxTTLSeconds)")
        }
        return n
    }

    /// At most 16 keys of 1 to 64 bytes to string values of at most 256 bytes. Metadata is stored
    /// in clear: a key or value that holds a run of nine or more digits in any spelling (a card
    /// number, an SSN, with any separators) is refused, and never echoed.
    static func parseMetadata(_ v: JSONValue, at: String) throws(CloakError) -> [String: String] {
        guard case let .object(members) = v, members.count <= 16 else {
            throw .malformed("\(at) must be an object of at most 16 string keys to string values")
        }
        var out: [String: String] = [:]
        for (key, value) in members {
            guard !key.isEmpty, key.utf8.count <= 64 else { throw .malformed("\(at): each key is 1 to 64 bytes") }
            guard !key.hasPrefix("cloak:") else { throw .malformed("\(at): keys starting cloak: are Cloak's own") }
            guard case let .string(text) = value, text.utf8.count <= 256 else {
                throw .malformed("\(at): each value is a string of at most 256 bytes")
            }
            guard !holdsLongDigitRun(key), !holdsLongDigitRun(text) else {
                throw .malformed(
                    "\(at) may not hold a run of nine or more digits (metadata is stored in clear: no card number or SSN)"
                )
            }
            guard out.updateValue(text, forKey: key) == nil else { throw .malformed("\(at) has a key twice") }
        }
        return out
    }

    /// Whether `text` holds nine or more digits in a run, whatever their spelling and separators
    /// (what ``Redaction/scrub(_:limit:)`` would hide).
    static func holdsLongDigitRun(_ text: String) -> Bool {
        Redaction.scrub(text, limit: 2_048) != text
    }
}
