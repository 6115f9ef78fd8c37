import CloakCollect
import CloakTesting
import Foundation
import Testing

/// Issue 35: for every field of the shipped forms and the parity form, and the inputs the
/// browser parity test types, the client's state equals the live server's `/validate` state for
/// the same text, member by member (the client posts exactly what it holds: `submit(.validate)`).
@Suite(.serialized, .tags(.sockets)) struct ConformanceTests {
    /// Which fixture inputs each field type is typed with.
    static let kinds: [String: String] = [
        "cardNumber": "card", "cvc": "cvc", "expDate": "exp", "ssn": "ssn", "date": "date",
        "cardHolderName": "name", "none": "name",
    ]

    @Test(arguments: ["parity", "checkout", "identity"])
    func everyFieldMatchesTheServer(form: String) async throws {
        try await withTestServer(LiveServer.start()) { server in
            let collect = CloakCollect(server: LiveServer.url(server), form: form)
            try await collect.loadSchema()
            var compared = 0
            for name in collect.fieldNames {
                let field = try collect.field(name)
                let inputs = LiveServer.cases[Self.kinds[field.configuration.type] ?? "name"] ?? []
                #expect(!inputs.isEmpty, "no fixture inputs for \(name)")
                // The shipped forms take a sample; the parity form every input.
                let sample =
                    form == "parity" ? inputs : inputs.enumerated().filter { $0.offset % 7 == 0 }.map(\.element)
                for input in sample {
                    collect.clearAll()
                    // A linked CVC is judged against an Amex number (four digits).
                    if name == "card_data.card_cvc" {
                        try collect.field("card_data.card_number").replace(0..<0, with: "378282246310005")
                    }
                    field.replace(0..<0, with: input)
                    let answer = try await collect.submit(.validate)
                    #expect(answer.status == 200, "\(name): \(answer.status)")
                    let server = try LiveServer.states(answer)
                    let client = collect.state
                    #expect(
                        client.isValid == server.isValid, "\(name), fixture input #\(inputs.firstIndex(of: input)!)")
                    for (fieldName, state) in server.fields {
                        #expect(
                            client.fields[fieldName] == state,
                            "\(fieldName) after \(name) got fixture input #\(inputs.firstIndex(of: input)!)")
                    }
                    compared += 1
                }
            }
            #expect(compared > 20)
        }
    }

    /// Issue 44: the checkout form's masked phone after every edit of the mask table
    /// (`maskEdits`): the text and caret the table gives, and a state equal to the live
    /// server's `/validate` state for that text (the client posts exactly what it shows).
    @Test func aMaskedFieldMatchesTheServerAfterEveryEdit() async throws {
        let masks = try #require(MaskEditTable.shared)
        try await withTestServer(LiveServer.start()) { server in
            let collect = CloakCollect(server: LiveServer.url(server), form: masks.form)
            try await collect.loadSchema()
            let field = try collect.field(masks.field)
            var validity: Set<Bool> = []
            var compared = 0
            for table in masks.cases {
                collect.clearAll()
                for (step, edit) in table.steps.enumerated() {
                    let at = "\(table.what), step \(step): \(edit)"
                    field.replace(edit.range, with: edit.text)
                    #expect(
                        field.text == edit.shown && field.caret == edit.caret, "\(at): \(field.text), \(field.caret)")
                    let answer = try await collect.submit(.validate)
                    #expect(answer.status == 200, "\(at): \(answer.status)")
                    let states = try LiveServer.states(answer)
                    let state = try #require(states.fields[masks.field], "\(at): no state in the answer")
                    #expect(collect.state.fields[masks.field] == state, "\(at)")
                    validity.insert(state.isValid)
                    compared += 1
                }
            }
            #expect(compared == masks.cases.reduce(0) { $0 + $1.edits.count })
            // Complete numbers and incomplete ones were both compared.
            #expect(validity == [true, false])
        }
    }

    /// While focused, a card's last four waits for its brand's longest length; left, it is the
    /// server's.
    @Test func aFocusedCardShowsItsLastFourOnlyAtItsLongestLength() async throws {
        try await withTestServer(LiveServer.start()) { server in
            let collect = CloakCollect(server: LiveServer.url(server), form: "checkout")
            try await collect.loadSchema()
            let number = try collect.field("card_data.card_number")
            number.setFocused(true)
            number.replace(0..<0, with: "4111111111111111")
            #expect(number.state.isValid && number.state.last4 == "" && number.state.bin == "41111111")
            #expect(number.state.isFocused)
            number.setFocused(false)
            #expect(number.state.last4 == "1111" && !number.state.isFocused)
            let amex = try collect.field("card_data.card_number")
            amex.clear()
            amex.setFocused(true)
            amex.replace(0..<0, with: "378282246310005")  // 15: Amex's longest
            #expect(amex.state.last4 == "0005")
        }
    }
}
