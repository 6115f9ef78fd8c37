import CloakCore
import CloakTesting
import Testing

@testable import CloakVault

/// A rows export's pages (issue 76): whole groups by what one of their records holds, parts an
/// export may not take left out and counted, records in no group as groups of one.
@Suite struct ExportRowsTests {
    static func value(
        _ text: String, _ field: String?, storage: StorageKind = .persistent, classifiers: [String] = []
    ) -> AliasRequest {
        var request = AliasRequest(value: text, format: .UUID, storage: storage, classifiers: classifiers)
        request.groupField = field
        return request
    }

    /// Every page of both walks, as the runner reads them.
    static func walk(_ vault: Vault, _ store: any AliasStore, _ filter: ExportFilter, open: Bool = true) throws
        -> [ExportGroupRow]
    {
        var rows: [ExportGroupRow] = []
        var after: String?
        repeat {
            let page = try vault.exportGroups(after: after, limit: 2, filter: filter, open: open, in: store)
            rows += page.rows
            after = page.next
        } while after != nil
        repeat {
            let page = try vault.exportUngrouped(after: after, limit: 2, filter: filter, open: open, in: store)
            rows += page.rows
            after = page.next
        } while after != nil
        return rows
    }

    @Test func aSelectionTakesWholeGroupsWithoutWhatItMayNotTake() throws {
        try withVaultHarness { harness in
            let vault = try harness.openVault()
            // Selected by its card's classifier: the expiry comes with it; the VOLATILE part stays.
            let selected = try vault.createSync([
                Self.value("4111111111111111", "card_number", classifiers: ["form:cards"]),
                Self.value("12/29", "exp_date"),
                Self.value("123456", "one_time", storage: .volatile),
            ]).get()
            // No part carries the classifier: not selected.
            _ = try vault.createSync([Self.value("x", "a"), Self.value("y", "b")]).get()
            // Alone: a group of one, selected by its own classifier.
            _ = try vault.createSync([Self.value("5555555555554444", nil, classifiers: ["form:cards"])]).get()
            let store = try harness.inspector()
            let filter = ExportFilter(match: .classifier("form:cards"), asOf: harness.clock.now)
            let rows = try Self.walk(vault, store, filter)
            #expect(rows.count == 2)
            let group = try #require(rows.first)
            #expect(group.group == selected[0].group && group.group != nil)
            #expect(group.parts.map(\.name) == ["card_number", "exp_date"])
            #expect(group.parts.map(\.value) == ["4111111111111111", "12/29"])
            #expect(group.leftOut == 1)
            let single = try #require(rows.last)
            #expect(single.group == nil && single.parts.map(\.name) == [ExportGroupRow.singleField])
            #expect(single.parts.map(\.value) == ["5555555555554444"])
            // A count reads the same rows without a value.
            let counted = try Self.walk(vault, store, filter, open: false)
            #expect(counted.map { $0.parts.map(\.record) } == rows.map { $0.parts.map(\.record) })
            #expect(counted.allSatisfy { $0.parts.allSatisfy(\.value.isEmpty) })
            // Everything: the other group too.
            #expect(try Self.walk(vault, store, ExportFilter(match: .everything, asOf: harness.clock.now)).count == 3)
        }
    }

    @Test func aGroupMadeAfterTheCountedSecondLeavesItsRecordsAsTheyWere() throws {
        try withVaultHarness { harness in
            let vault = try harness.openVault()
            _ = try vault.createSync([Self.value("4111111111111111", nil)]).get()
            let asOf = harness.clock.now
            harness.clock.advance(by: 5)
            // The same card, now in a group: the export counted before still sees a group of one.
            _ = try vault.createSync([Self.value("4111111111111111", "card"), Self.value("01/30", "exp")]).get()
            let rows = try Self.walk(vault, try harness.inspector(), ExportFilter(match: .everything, asOf: asOf))
            #expect(rows.map(\.group) == [nil])
            #expect(rows.first?.parts.map(\.value) == ["4111111111111111"])
        }
    }

    @Test func aDeletedPartIsLeftOutAndAnAlteredGroupFailsThePage() throws {
        try withVaultHarness { harness in
            let vault = try harness.openVault()
            let made = try vault.createSync([Self.value("4111111111111111", "card"), Self.value("Ada", "name")]).get()
            _ = try vault.deleteSync(made[1].aliases[0].alias).get()
            let store = try harness.inspector()
            let filter = ExportFilter(match: .everything, asOf: harness.clock.now)
            let rows = try Self.walk(vault, store, filter)
            #expect(rows.map { $0.parts.map(\.name) } == [["card"]] && rows.first?.leftOut == 1)
            let id = try #require(made[0].group)
            // Its time moved past the counted second: the page fails rather than lose the group.
            try harness.execute("UPDATE record_groups SET created_at = created_at + 60 WHERE id = '\(id)'")
            #expect(throws: VaultError.self) {
                try vault.exportGroups(after: nil, limit: 10, filter: filter, open: false, in: store)
            }
            try harness.execute("UPDATE record_groups SET created_at = created_at - 60 WHERE id = '\(id)'")
            #expect(
                try vault.exportGroups(after: nil, limit: 10, filter: filter, open: false, in: store).rows.count == 1)
            try harness.execute("UPDATE record_groups SET tag = zeroblob(16) WHERE id = '\(id)'")
            #expect(throws: VaultError.self) {
                try vault.exportGroups(after: nil, limit: 10, filter: filter, open: false, in: store)
            }
        }
    }
}
