import CloakCollect
import Foundation
import Testing

/// Issue 35: typing, pasting and deleting at the start, middle and end of every field type of
/// the shipped `checkout` and `identity` forms, with the caret after every step; issue 44: the
/// masked phone, over the fixture's mask table.
@Suite struct EditingTableTests {
    struct Table: Sendable, CustomStringConvertible {
        let form: String
        let field: String
        let what: String
        let edits: [Edit]
        var description: String { "\(form).\(field): \(what)" }
    }

    static let card = "card_data.card_number"

    static let tables: [Table] = [
        Table(
            form: "checkout", field: card, what: "typing a Visa digit by digit, then past its longest length",
            edits: typed("4111111111111111111") + [.type(at: 23, "2", "4111 1111 1111 1111 111", 23)]),
        Table(
            form: "checkout", field: card, what: "a paste with separators and letters",
            edits: [.type(at: 0, "4111-1111 1111.1111x", "4111 1111 1111 1111", 19)]),
        Table(
            form: "checkout", field: card, what: "letters dropped, the caret after what was kept",
            edits: [.type(at: 0, "4a1b1", "411", 3)]),
        Table(
            form: "checkout", field: card, what: "a digit typed in the middle keeps the caret after it",
            edits: [
                .type(at: 0, "411111111111111", "4111 1111 1111 111", 18),
                .type(at: 5, "9", "4111 9111 1111 1111", 6),
                // Right before a divider: the same place for the digits.
                .type(at: 9, "7", "4111 9111 7111 1111 1", 11),
                // A 5 in front would make 18 digits of a Mastercard (16 at most): dropped.
                .type(at: 0, "5", "4111 9111 7111 1111 1", 0),
                .delete(19..<21, "4111 9111 7111 1111", 19),
                .delete(4..<5, "4119 1117 1111 111", 3),
            ]),
        Table(
            form: "checkout", field: card, what: "backspace over a divider deletes the digit before it",
            edits: [
                .type(at: 0, "41111111", "4111 1111", 9),
                .delete(4..<5, "4111 111", 3),
                .delete(7..<8, "4111 11", 7),
                .delete(4..<5, "4111 1", 3),
                // The last digit of a group: no divider is left trailing.
                .delete(5..<6, "4111", 4),
                .delete(0..<1, "111", 0),
                .delete(0..<3, "", 0),
            ]),
        Table(
            form: "checkout", field: card, what: "Amex re-flows 4-6-5 and stops at 15",
            edits: typed("3782822463100059") + [
                .delete(0..<1, "7828 2246 3100 05", 0),
                .type(at: 0, "3", "3782 822463 10005", 1),
            ]),
        Table(
            form: "checkout", field: card, what: "a paste over a selection",
            edits: [
                .type(at: 0, "4111111111111111", "4111 1111 1111 1111", 19),
                .type(at: 0, "", "4111 1111 1111 1111", 0),
                Edit(5..<14, "2222-3333", "4111 2222 3333 1111", 14),
            ]),
        Table(
            form: "checkout", field: "card_data.exp_date", what: "typing and deleting an expiry",
            edits: typed("12300") + [
                .delete(4..<5, "12/3", 4),
                .delete(2..<3, "13", 1),
                .type(at: 1, "2", "12/3", 2),
                .type(at: 0, "1/", "11/23", 1),
            ]),
        Table(
            form: "checkout", field: "card_data.card_cvc", what: "the CVC of an unknown card holds 4 digits",
            edits: [.type(at: 0, "12a345", "1234", 4), .delete(1..<2, "134", 1), .type(at: 1, "2", "1234", 2)]),
        Table(
            form: "checkout", field: "card_data.card_holder", what: "a name is kept as typed",
            edits: [
                .type(at: 0, "Jne Doe", "Jne Doe", 7), .type(at: 1, "a", "Jane Doe", 2),
                .delete(4..<5, "JaneDoe", 4), .type(at: 7, " 😀", "JaneDoe 😀", 10),
                .delete(8..<10, "JaneDoe ", 8),
            ]),
        Table(
            form: "checkout", field: "customer.ssn", what: "an SSN lays out 3-2-4",
            edits: typed("1234567890") + [
                .delete(3..<4, "124-56-789", 2), .type(at: 2, "3", "123-45-6789", 3), .delete(0..<11, "", 0),
            ]),
        Table(
            form: "identity", field: "person.ssn", what: "a pasted SSN with other separators",
            edits: [.type(at: 0, "123 45 6789", "123-45-6789", 11)]),
        Table(
            form: "identity", field: "person.full_name", what: "a name with letters of any script",
            edits: [.type(at: 0, "Zoë", "Zoë", 3), .type(at: 3, " Ångström", "Zoë Ångström", 12)]),
        Table(
            form: "identity", field: "person.birth_date", what: "a date is kept as typed",
            edits: [.type(at: 0, "12/31/1990", "12/31/1990", 10), .delete(2..<3, "1231/1990", 2)]),
        Table(
            form: "identity", field: "bank.routing_number", what: "a routing number is kept as typed",
            edits: [.type(at: 0, "021000021", "021000021", 9)]),
    ]

    /// Typing `digits` one at a time at the end of a card number, expiry or SSN.
    static func typed(_ characters: String) -> [Edit] {
        var edits: [Edit] = []
        var shown = ""
        var field = ""
        for c in characters {
            field.append(c)
            let before = shown
            shown = layout(field, kind: characters)
            edits.append(.type(at: before.utf16.count, String(c), shown, shown.utf16.count))
        }
        return edits
    }

    /// What the shown text should be for `typed` characters (the tables' own expectation).
    static func layout(_ typed: String, kind: String) -> String {
        let groups: [Int]
        if kind.hasPrefix("37") {
            groups = [4, 6, 5]
        } else if kind.hasPrefix("4") {
            groups = [4, 4, 4, 4, 3]
        } else if kind.hasPrefix("1230") {
            groups = [2, 2]
        } else {
            groups = [3, 2, 4]
        }
        let divider = kind.hasPrefix("1230") ? "/" : (kind.hasPrefix("123") ? "-" : " ")
        var rest = Substring(typed.prefix(groups.reduce(0, +)))
        var parts: [Substring] = []
        for g in groups where !rest.isEmpty {
            parts.append(rest.prefix(g))
            rest = rest.dropFirst(g)
        }
        return parts.joined(separator: divider)
    }

    @Test(arguments: tables)
    func table(_ table: Table) async throws {
        let (collect, _) = try await SchemaStub.collect(table.form)
        let field = try collect.field(table.field)
        for (step, edit) in table.edits.enumerated() {
            field.replace(edit.range, with: edit.text)
            #expect(field.text == edit.shown, "step \(step): \(edit)")
            #expect(field.caret == edit.caret, "step \(step): \(edit): caret")
        }
    }

    /// Issue 44: the checkout form's masked phone is laid out in its mask as the user types,
    /// over the case table every client runs (`maskEdits`).
    @Test(arguments: MaskEditTable.shared?.cases ?? [])
    func maskedPhone(_ table: MaskEditTable.Case) async throws {
        let masks = try #require(MaskEditTable.shared)
        let (collect, _) = try await SchemaStub.collect(masks.form)
        let field = try collect.field(masks.field)
        for (step, edit) in table.steps.enumerated() {
            field.replace(edit.range, with: edit.text)
            #expect(field.text == edit.shown, "step \(step): \(edit)")
            #expect(field.caret == edit.caret, "step \(step): \(edit): caret")
        }
    }

    /// The mask table is written for the shipped field: its mask and transform.
    @Test func theMaskTableIsTheShippedPhone() throws {
        let masks = try #require(MaskEditTable.shared)
        #expect(masks.cases.count >= 7)
        #expect(try masks.isTheShippedField())
    }

    @Test func theCVCFollowsTheLinkedCardsBrand() async throws {
        let (collect, _) = try await SchemaStub.collect("checkout")
        let number = try collect.field(Self.card)
        let cvc = try collect.field("card_data.card_cvc")
        number.replace(0..<0, with: "378282246310005")
        cvc.replace(0..<0, with: "12345")
        #expect(cvc.text == "1234" && cvc.state.isValid)
        // Another brand: three digits; the fourth goes.
        number.replace(0..<1, with: "4")
        #expect(cvc.text == "123")
        number.replace(0..<number.text.utf16.count, with: "")
        #expect(cvc.text == "123" && number.text.isEmpty)
    }

    @Test func rangesOutsideTheTextAreClamped() async throws {
        let (collect, _) = try await SchemaStub.collect("checkout")
        let number = try collect.field(Self.card)
        number.replace(50..<60, with: "4111")
        #expect(number.text == "4111" && number.caret == 4)
        number.replace(3..<3, with: "")
        number.replace(-5..<2, with: "")
        #expect(number.text == "11" && number.caret == 0)
        number.clear()
        #expect(number.text.isEmpty && number.caret == 0 && !number.state.isDirty)
    }
}
