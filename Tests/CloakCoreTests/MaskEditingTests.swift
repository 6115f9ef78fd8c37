import Foundation
import Testing

@testable import CloakCore

/// Issue 44: a mask applied while typing (``InputMask/edit(text:selection:replacement:)``), over the
/// case table every client runs (`Tests/Fixtures/collect-cases.json`, `maskEdits`: CloakCollect's
/// `CloakField` and Cloak Elements' frames run the same cases).
@Suite struct MaskEditingTests {
    /// The fixture's `maskEdits` table.
    struct Table: Decodable, Sendable {
        struct Position: Decodable, Sendable {
            let literal: String?
            let regex: String?
        }

        struct Edit: Decodable, Sendable, CustomStringConvertible {
            let range: [Int]
            let text: String
            let shown: String
            let caret: Int

            /// The UTF-16 range the edit replaces.
            var selection: Range<Int> {
                let lower = range.first ?? 0
                return lower..<max(lower, range.last ?? lower)
            }

            var description: String { "replace \(selection) with \(text.debugDescription)" }
        }

        struct Case: Decodable, Sendable, CustomStringConvertible {
            let what: String
            let edits: [Edit]
            var description: String { what }
        }

        let form: String
        let field: String
        let mask: [Position]
        let cases: [Case]

        /// The mask the table is written for.
        func inputMask() throws -> InputMask {
            InputMask(
                try mask.map { p -> InputMask.Position in
                    if let literal = p.literal, literal.count == 1, let c = literal.first { return .literal(c) }
                    return .pattern(try RegexPattern(p.regex ?? ""))
                })
        }
    }

    static let table: Table? = {
        struct File: Decodable { let maskEdits: Table }
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/collect-cases.json")
        guard let data = try? Data(contentsOf: url) else { return nil }
        return try? JSONDecoder().decode(File.self, from: data).maskEdits
    }()

    @Test func theTableIsThere() throws {
        let table = try #require(Self.table)
        #expect(table.cases.count >= 7)
        #expect(try table.inputMask().positions.count == 13)
    }

    @Test(arguments: table?.cases ?? [])
    func everyEditOfTheTable(_ c: Table.Case) throws {
        let table = try #require(Self.table)
        let mask = try table.inputMask()
        var text = ""
        for (step, edit) in c.edits.enumerated() {
            let edited = mask.edit(text: text, selection: edit.selection, replacement: edit.text)
            #expect(edited.text == edit.shown, "step \(step): \(edit)")
            #expect(edited.caret == edit.caret, "step \(step): \(edit): caret")
            // What an edit shows is what the server keeps when it masks it again (it may only
            // fill in literals after it).
            #expect(mask.apply(edited.text).value.hasPrefix(edited.text), "step \(step): \(edit)")
            text = edited.text
        }
    }

    // MARK: beyond the table

    /// An edit's text and caret, as one value to compare.
    struct Shown: Equatable, CustomStringConvertible {
        let text: String
        let caret: Int
        init(_ text: String, _ caret: Int) {
            self.text = text
            self.caret = caret
        }
        var description: String { "\(text.debugDescription) caret \(caret)" }
    }

    static func edit(_ mask: InputMask, _ text: String, _ selection: Range<Int>, _ replacement: String) -> Shown {
        let edited = mask.edit(text: text, selection: selection, replacement: replacement)
        return Shown(edited.text, edited.caret)
    }

    static let anyFour = InputMask(Array(repeating: .pattern(try! RegexPattern(".")), count: 4))

    /// UTF-16 offsets inside a character are widened to the whole character.
    @Test func offsetsInsideACharacterTakeTheWholeCharacter() {
        // "😀" is two UTF-16 units: offset 2 is inside it.
        #expect(Self.edit(Self.anyFour, "a😀b", 2..<2, "c") == Shown("ac😀b", 2))
        #expect(Self.edit(Self.anyFour, "a😀b", 2..<3, "") == Shown("ab", 1))
        #expect(Self.edit(Self.anyFour, "a😀b", 1..<2, "x") == Shown("axb", 2))
    }

    @Test func rangesOutsideTheTextAreClamped() {
        let phone = MaskTests.phoneMask
        #expect(Self.edit(phone, "(555", 50..<60, "1") == Shown("(555)1", 6))
        #expect(Self.edit(phone, "(555", -5..<50, "") == Shown("", 0))
        #expect(Self.edit(phone, "", -1..<0, "") == Shown("", 0))
    }

    /// An edit that changes nothing keeps the text, a typed literal at its end included.
    @Test func anEmptyEditKeepsTheText() {
        let phone = MaskTests.phoneMask
        #expect(Self.edit(phone, "(555)", 5..<5, "") == Shown("(555)", 5))
        #expect(Self.edit(phone, "(555)", 2..<2, "") == Shown("(555)", 2))
        #expect(Self.edit(phone, "(", 0..<0, "") == Shown("(", 0))
    }

    /// A literal beyond ASCII is filled in, typed, and deleted as an ASCII one is.
    @Test func aLiteralBeyondASCII() throws {
        let digit = InputMask.Position.pattern(try RegexPattern(#"\d"#))
        let mask = InputMask([.literal("\u{E9}"), digit, digit])
        #expect(Self.edit(mask, "", 0..<0, "12") == Shown("\u{E9}12", 3))
        #expect(Self.edit(mask, "", 0..<0, "\u{E9}2") == Shown("\u{E9}2", 2))
        #expect(Self.edit(mask, "\u{E9}2", 1..<2, "") == Shown("", 0))
    }

    /// A long paste of refused characters is dropped as a whole.
    @Test func aLongRefusedPasteIsDropped() {
        let pasted = String(repeating: "x", count: 10_000) + "5"
        #expect(Self.edit(MaskTests.phoneMask, "(555", 4..<4, pasted) == Shown("(555)5", 6))
    }
}
