import CloakCore
import CloakCrypto

/// What a group holds, as its sealed body says: each field by name, with the record and the alias
/// stored under it, in the order the values came (a form's field order, an import's columns).
///
/// The body is JSON, `{"fields":[{"name","record","alias","format"},…]}` (`format` as a store
/// keeps it, ``IssuedAlias/storedFormat``), sealed with AES-256-GCM under a data key; its
/// associated data binds the group's id and key version (``associatedData(_:_:)``), as a
/// record's binds its own. A writer who swaps two groups' bodies, or a body's record for another,
/// makes the group fail to open.
package struct RecordGroup: Sendable, Equatable {
    package struct Field: Sendable, Equatable {
        package var name: String
        package var recordID: String
        package var alias: IssuedAlias

        package init(name: String, recordID: String, alias: IssuedAlias) {
            self.name = name
            self.recordID = recordID
            self.alias = alias
        }
    }

    package var fields: [Field]
    /// When the group was made (seconds since 1970), sealed with it: a row's `created_at` that a
    /// database writer moved (to hide the group from an export counted before it) does not open.
    package var createdAt: Int64

    package init(fields: [Field], createdAt: Int64) {
        self.fields = fields
        self.createdAt = createdAt
    }

    /// The records the group holds, once each (two fields may hold one value: one record).
    package var recordIDs: [String] {
        var seen = Set<String>()
        return fields.map(\.recordID).filter { seen.insert($0).inserted }
    }

    /// The body's bytes, as sealed: `{"fields":[…],"created_at":N}`.
    package var encoded: [UInt8] {
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("fields" as StaticString)
        writer.beginArray()
        for field in fields {
            writer.nextElement()
            writer.beginObject()
            writer.member("name", field.name)
            writer.member("record", field.recordID)
            writer.member("alias", field.alias.alias)
            writer.member("format", field.alias.storedFormat)
            writer.endObject()
        }
        writer.endArray()
        writer.member("created_at", Int(createdAt))
        writer.endObject()
        return writer.takeBytes()
    }

    /// The body in `bytes`; nil when they are not one this version wrote.
    package init?(encoded bytes: [UInt8]) {
        guard case let .object(members)? = try? JSONParser().parse(bytes),
            case let .array(items)? = members.first(where: { $0.key == "fields" })?.value,
            case let .number(created)? = members.first(where: { $0.key == "created_at" })?.value,
            let createdAt = Int64(created)
        else { return nil }
        self.createdAt = createdAt
        var fields: [Field] = []
        for item in items {
            guard case let .object(parts) = item else { return nil }
            func text(_ key: String) -> String? {
                if case let .string(s)? = parts.first(where: { $0.key == key })?.value { return s }
                return nil
            }
            guard let name = text("name"), let record = text("record"), let alias = text("alias"),
                let format = text("format").flatMap(IssuedAlias.parseStoredFormat)
            else { return nil }
            fields.append(
                Field(
                    name: name, recordID: record,
                    alias: IssuedAlias(alias: alias, format: format.format, luhnValid: format.luhnValid)))
        }
        self.fields = fields
    }

    /// The associated data a group's body is sealed with: its id and key version, under a label
    /// of its own (a record's is `id|key`, and record ids start `rec_`, group ids `grp_`).
    static func associatedData(_ groupID: String, _ keyID: String) -> [UInt8] {
        Array("cloak/v1/group|\(groupID)|\(keyID)".utf8)
    }

    /// The group sealed under `key` as group `id`.
    func sealed(id: String, key: KeyRing.DataKey, createdAt: Int64) throws(VaultError) -> StoredGroup {
        do {
            let box = try AESGCM.seal(
                encoded, key: key.encryptionKey, associatedData: Self.associatedData(id, key.id))
            return StoredGroup(id: id, keyID: key.id, sealed: box, createdAt: createdAt, members: recordIDs)
        } catch {
            throw .unavailable("cannot seal a group")
        }
    }

    /// The body of `group`, opened with `key` (its ``StoredGroup/keyID``); nil when it does not
    /// open as that group's (altered, moved, or sealed by another key).
    static func open(_ group: StoredGroup, key: KeyRing.DataKey) -> RecordGroup? {
        guard
            let plain = try? AESGCM.open(
                group.sealed, key: key.encryptionKey, associatedData: associatedData(group.id, group.keyID)),
            let body = RecordGroup(encoded: plain), body.createdAt == group.createdAt
        else { return nil }
        return body
    }
}

/// Group ids: `grp_` and 22 base58 characters laid out as ``RecordID``'s (the second, a sequence,
/// 72 random bits), so a batch's groups share index pages; never derived from a value.
enum GroupID {
    static func make(now: Int64) -> String { "grp_" + RecordID.make(now: now).dropFirst(4) }
}
