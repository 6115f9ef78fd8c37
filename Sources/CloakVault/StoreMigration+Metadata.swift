extension StoreMigration {
    /// The vault's own named values: the key-check value (a destination with another one is
    /// refused: its records are sealed under other keys), the mark that every alias row is
    /// signed, and the wrapped key ring.
    static let vaultKinds = [
        MetadataKind(prefix: Vault.keyCheckName, kind: .keys),
        MetadataKind(prefix: Vault.aliasesSignedName, kind: .keys),
        MetadataKind(prefix: Vault.keyRingName, kind: .keys),
    ]

    /// The kind of a named value: the longest prefix that names it; `other` when none does.
    func kind(of name: String) -> MetadataKind {
        (Self.vaultKinds + metadataKinds).filter { name.hasPrefix($0.prefix) }.max { $0.prefix.count < $1.prefix.count }
            ?? MetadataKind(prefix: name, kind: .other)
    }

    /// Every named value of the source, in one destination transaction before any record: a
    /// value the destination lacks is copied; one it holds differently refuses the migration
    /// (or is kept, for a hint), so nothing is copied into a store that is another vault's.
    func copyMetadata(_ report: inout Report) throws(Error) {
        var refusal: Error?
        do throws(StoreError) {
            let names = try source.metadataNames(prefix: "").filter {
                !Self.storeOwnNames.contains($0) && kind(of: $0).difference != .skip
            }
            let ordered = names.filter { !kind(of: $0).last }.sorted() + names.filter { kind(of: $0).last }.sorted()
            try destination.begin()
            for name in ordered {
                guard let value = try source.metadata(name) else { continue }
                let kind = kind(of: name)
                if let existing = try destination.metadata(name) {
                    if existing == value || kind.difference == .keepDestination {
                        report.count(kind.kind, copied: false)
                        continue
                    }
                    refusal = name == Vault.keyCheckName ? .differentKeys : .conflict(name: name, kind: kind.kind)
                    break
                }
                try destination.setMetadata(name, value)
                report.count(kind.kind, copied: true)
            }
            if refusal != nil { destination.rollback() } else { try destination.commit() }
        } catch {
            destination.rollback()
            throw .store(error)
        }
        if let refusal { throw refusal }
    }
}
