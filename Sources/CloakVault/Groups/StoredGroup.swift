import CloakCrypto

/// Values stored together (issue 76): the fields of one form submission, one import row, one
/// `POST /aliases` call with several values. A group is a row of its own in the store, naming
/// each field and the record and alias stored under it (``RecordGroup``), sealed under a data
/// key and bound to its id, so a database writer cannot move a value into another row unseen.
///
/// Equal values are stored once, so one record may belong to many groups (the same expiry in a
/// thousand rows). ``members`` is the store's index of which records a group holds, for the
/// selections that start from records; the sealed body is what is believed, and a member the
/// index names that the body does not is ignored.
package struct StoredGroup: Sendable, Equatable {
    /// `grp_` and 22 base58 characters (``GroupID``): random, never derived from a value.
    package var id: String
    package var keyID: String
    package var sealed: AESGCM.SealedBox
    /// Seconds since 1970.
    package var createdAt: Int64
    /// The records the group holds, as the store indexes them (in no set order).
    package var members: [String]

    package init(id: String, keyID: String, sealed: AESGCM.SealedBox, createdAt: Int64, members: [String]) {
        self.id = id
        self.keyID = keyID
        self.sealed = sealed
        self.createdAt = createdAt
        self.members = members
    }

    package static func == (a: StoredGroup, b: StoredGroup) -> Bool {
        a.id == b.id && a.keyID == b.keyID && a.sealed == b.sealed && a.createdAt == b.createdAt
            && Set(a.members) == Set(b.members)
    }
}

extension GroupStore {
    /// ``groups(after:limit:withMembers:)`` with their members.
    package func groups(after id: String?, limit: Int) throws(StoreError) -> [StoredGroup] {
        try groups(after: id, limit: limit, withMembers: true)
    }
}

/// What a store does with groups (every ``AliasStore`` does it, and the compatibility suite holds
/// each to it).
package protocol GroupStore: AnyObject {
    /// Adds a group and its members' index rows, in the transaction under way (the one that
    /// stores its values). A member that is no record fails the write.
    func insertGroup(_ group: StoredGroup) throws(StoreError)
    /// Adds several groups at once, as ``insertGroup(_:)`` adds one (an import batch's: one
    /// statement on a database server, where each is a round trip).
    func insertGroups(_ groups: [StoredGroup]) throws(StoreError)
    /// Up to `limit` groups whose ids sort after `id` (nil: from the start), in id order, with
    /// their members (`withMembers`; else ``StoredGroup/members`` is empty and the index is not
    /// read: a rows export believes the bodies): pages for exports and `cloak store migrate`.
    func groups(after id: String?, limit: Int, withMembers: Bool) throws(StoreError) -> [StoredGroup]
    /// The group with this id, with its members (nil: none).
    func group(id: String) throws(StoreError) -> StoredGroup?
    /// The groups that hold record `recordID`, in id order.
    func groups(ofRecord recordID: String) throws(StoreError) -> [StoredGroup]
    /// The records the groups `groupIDs` hold as the index says, with their aliases, by id: one
    /// statement for a page of a rows export (the bodies say which of them each group names).
    func groupMembers(_ groupIDs: [String]) throws(StoreError) -> [String: StoredRecord]
    /// Which of `recordIDs` are in a group made at or before `asOf` (a rows export takes the
    /// others as groups of one). One statement on a server.
    func groupedRecords(_ recordIDs: [String], asOf: Int64) throws(StoreError) -> Set<String>
    /// How many groups are stored.
    func groupCount() throws(StoreError) -> Int
    /// Up to `limit` groups sealed with `keyID` whose ids sort after `id`, in id order (key
    /// rewrap): ids and sealed bodies only.
    func sealedGroups(keyID: String, after id: String?, limit: Int) throws(StoreError) -> [SealedRecord]
    /// As ``AliasStore/reseal(_:)`` for groups: each replaced only while still as read.
    func resealGroups(_ groups: [(old: SealedRecord, new: SealedRecord)]) throws(StoreError) -> Set<String>
}

extension GroupStore {
    /// One at a time (an embedded store: no round trips to save).
    package func insertGroups(_ groups: [StoredGroup]) throws(StoreError) {
        for group in groups { try insertGroup(group) }
    }
}
