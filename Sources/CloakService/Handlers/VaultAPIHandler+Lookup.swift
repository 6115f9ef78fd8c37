import CloakCore
import CloakHTTP
import CloakVault

/// `POST /aliases/lookup` (scope `aliases:lookup`): whether each value is in the vault and under
/// which aliases, without creating anything. `data[i]` is value i's kept record without its
/// value, or null (intents, VOLATILE and expired records are not found). Audited like a reveal.
/// Each value costs one request of the token's rate, and values not found count against the
/// token's `bucket_values_per_hour` (``LookupAdmission``): from a receipt's BIN and last four a
/// lookup would otherwise test 10^5 candidates in seconds.
extension VaultAPIHandler {
    func lookup(_ request: HTTPRequest) throws(CloakError) -> Reply {
        let values = try Self.parseLookup(try request.jsonBody(), maxBatch: vault.settings.maxBatch)
        return .later { finish in
            vault.lookup(values) { result in
                switch result {
                case let .success(records):
                    for record in records {
                        // One line per value, by the first alias found (never the value).
                        audit(record?.aliases.first?.alias ?? "-", record == nil ? .notFound : .ok)
                    }
                    finish(.json(200, Self.lookupAnswer(records)))
                case let .failure(error):
                    finish(.error(error.cloakError { "data[\($0)]" }))
                }
            }
        }
    }

    /// `{"data":[{"aliases","storage","classifiers","created_at","expires_at","metadata"} | null, …]}`.
    static func lookupAnswer(_ records: [RevealedRecord?]) -> [UInt8] {
        var w = JSONWriter(reservingCapacity: 160 * records.count + 16)
        w.beginObject()
        w.key("data" as StaticString)
        w.beginArray()
        for record in records {
            w.nextElement()
            guard let record else {
                w.writeNull()
                continue
            }
            record.write(into: &w, lifecycle: true, includeValue: false)
        }
        w.endArray()
        w.endObject()
        return w.takeBytes()
    }

    /// `{"data":[{"value":"…"}]}`, at most `maxBatch` values.
    static func parseLookup(_ body: JSONValue, maxBatch: Int) throws(CloakError) -> [String] {
        let items = try dataItems(body, maxBatch: maxBatch, shape: #"{"data":[{"value":"…"}]}"#)
        return try items.enumerated().map { (i, item) throws(CloakError) -> String in
            guard case let .object(members) = item, members.count == 1, members[0].key == "value",
                case let .string(value) = members[0].value
            else { throw .malformed("data[\(i)] must be {\"value\":\"…\"}") }
            guard !value.isEmpty, value.utf8.count <= 32_768 else {
                throw .malformed("data[\(i)].value must be 1 to 32768 bytes")
            }
            return value
        }
    }
}
