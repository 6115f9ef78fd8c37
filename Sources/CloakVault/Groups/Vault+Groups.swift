import CloakCore

/// Groups on the vault's side (issue 76): made in the transaction that stores their values,
/// opened where they are read.
extension Vault {
    /// The fewest members a group has: a single value forms none.
    package static let minimumGroupMembers = 2

    /// Seals the group of `fields` under the current key and writes it, with its members'
    /// index rows, in the transaction under way; its id. On the executor thread.
    func writeGroup(_ fields: [RecordGroup.Field], in store: any AliasStore) throws -> String {
        let group = try sealGroup(fields)
        try store.insertGroup(group)
        return group.id
    }

    /// The group of `fields`, sealed under the current key with a new id, not written yet.
    func sealGroup(_ fields: [RecordGroup.Field]) throws -> StoredGroup {
        let now = clock()
        return try RecordGroup(fields: fields, createdAt: now).sealed(
            id: GroupID.make(now: now), key: currentKey, createdAt: now)
    }

    /// The group a create's values form, by `names` (a member's field name, nil for a value that
    /// is none), written in the transaction under way; the answers of its members carry its id
    /// for a caller who may reveal. Nothing when fewer than ``minimumGroupMembers`` are members,
    /// or the caller is anonymous (its values are intents, kept one by one). Returns its id.
    @discardableResult
    func group(_ created: inout Created, names: [String?]?, caller: AliasCaller, in store: any AliasStore) throws
        -> String?
    {
        guard let group = try sealedGroup(&created, names: names, caller: caller) else { return nil }
        try store.insertGroup(group)
        return group.id
    }

    /// The group ``group(_:names:caller:in:)`` writes, sealed but not written yet (an import
    /// batch writes its rows' groups together: ``GroupStore/insertGroups(_:)``).
    func sealedGroup(_ created: inout Created, names: [String?]?, caller: AliasCaller) throws -> StoredGroup? {
        guard let names, !caller.anonymous else { return nil }
        let members = names.indices.filter { names[$0] != nil && $0 < created.stored.count }
        guard members.count >= Self.minimumGroupMembers else { return nil }
        let group = try sealGroup(
            members.map {
                RecordGroup.Field(
                    name: names[$0]!, recordID: created.stored[$0].recordID, alias: created.stored[$0].alias)
            })
        if caller.mayReveal { for index in members { created.answers[index].group = group.id } }
        return group
    }

    /// The body of `group`; nil when its key version is not in the ring or it does not open as
    /// this group's (a database writer altered or moved it).
    package func open(_ group: StoredGroup) -> RecordGroup? {
        guard let key = dataKey(group.keyID) else { return nil }
        return RecordGroup.open(group, key: key)
    }
}
