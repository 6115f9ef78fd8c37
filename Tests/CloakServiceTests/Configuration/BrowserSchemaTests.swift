import CloakCore
import CloakService
import CloakTesting
import Testing

/// Issue 35: the schema Cloak serves to its clients (`GET /elements/v1/forms/{form}`), read back
/// by ``BrowserSchema``, computes the very field states the server computes: for the shipped
/// forms and a form with every rule, mask, transform and brand option, over a corpus of inputs.
@Suite struct BrowserSchemaTests {
    static let today = CalendarDate(year: 2026, month: 11, day: 24)!

    /// A form with what the shipped ones leave out.
    static let everything = """
        forms:
          every:
            card_brands:
              custom: [{name: acme, regex: "^9", lengths: [12, 14], cvc_lengths: [4], luhn: false, format_pattern: "#### #### ####"}]
              accepted: [acme, visa, amex, mastercard, unionpay]
            fields:
              - {name: card, type: cardNumber, validation: [{payment_card: {validate_unknown_brand: true}, error: MY_CARD}]}
              - {name: cvc, type: cvc, card_field: card}
              - {name: free_cvc, type: cvc, format_pattern: "###"}
              - {name: exp, type: expDate, validation: [{exp_date: {format: longYear}}]}
              - {name: born, type: date, validation: [{date_range: {format: yyyymmdd, start: "1900-01-01", end: "2026-01-01"}}]}
              - {name: masked, type: none, mask: ["+", "1", " ", {regex: "[0-9]"}, {regex: "[0-9]"}, {regex: "[0-9]"}, "-", {regex: "[0-9]"}]}
              - {name: trimmed, type: none, transform: {matcher: "[^0-9]", replacement: ""}, validation: [{length: {min: 3, max: 5}}, luhn]}
              - {name: routing, type: none, validation: [aba_routing, {length_match: [9]}]}
              - {name: named, type: cardHolderName, required: true}
              - {name: patterned, type: none, format_pattern: "AA-##", validation: [{pattern: "^[A-Z]{2}[0-9]{2}$"}]}
        """

    static let corpus = [
        "", "4", "4111 1111 1111 1111", "4111111111111112", "378282246310005", "3782 822463 10005",
        "5555555555554444", "6011111111111117", "4222222222222", "4111-1111-1111-1111", "4111111111111111111",
        "6200000000000005", "999912345678", "99991234567890", "abcd", "١٢٣", "123", "1234", "12345", "12a",
        "12/30", "1230", "13/30", "01/20", "12/2030", "1/30", "123-45-6789", "123456789", "000-12-3456",
        "Jane Doe", "J", "名前", "+1 555-1", "5551", "AB12", "ab12", "1990-12-31", "19901231", "021000021",
        " 4111 ", "\t12\n", "4111111111111111 ",
    ]

    static func forms() throws -> [FormSchema] {
        let shipped = try ServiceConfiguration.parse(yaml: TestServer.shippedConfiguration, environment: [:])
        let extra = try ServiceConfiguration.parse(yaml: everything, environment: [:])
        return Array(shipped.forms.values) + Array(extra.forms.values)
    }

    @Test func aServedSchemaReadBackGivesTheServersStatesForEveryInput() throws {
        let context = ValidationContext(today: Self.today)
        for form in try Self.forms() {
            let read = try BrowserSchema(form.browserSchema(today: Self.today))
            #expect(read.today == Self.today && read.form.fields.map(\.name) == form.fields.map(\.name))
            #expect(read.form.brands.models.map(\.brand.id) == form.brands.models.map(\.brand.id))
            for (i, field) in form.fields.enumerated() {
                for input in Self.corpus {
                    var values = [String?](repeating: nil, count: form.fields.count)
                    values[i] = input
                    // A CVC is judged with a card in its card field (the brand decides its lengths).
                    if field.type == .cvc, let card = form.fields.firstIndex(where: { $0.type == .cardNumber }) {
                        values[card] = "378282246310005"
                    }
                    let server = FormValidation(form: form, values: values, context: context)
                    let client = FormValidation(form: read.form, values: values, context: context)
                    #expect(
                        server.stateJSON == client.stateJSON,
                        "\(form.name).\(field.name), input #\(Self.corpus.firstIndex(of: input)!)")
                }
            }
        }
    }

    @Test func presentationAndRefusals() throws {
        let checkout = try #require(try Self.forms().first { $0.name == "checkout" })
        let read = try BrowserSchema(checkout.browserSchema(today: Self.today))
        #expect(
            read.presentation["card_data.card_number"]
                == .init(title: "Card number", autocomplete: "cc-number", isNumeric: true))
        // A document that is not a schema: refused by member, never crashing.
        for bad: JSONValue in [
            .null, .array([]), .object([]), .object([("form", .string("f"))]),
            .object([
                ("form", .string("f")),
                ("today", .object([("year", .int(2026)), ("month", .int(13)), ("day", .int(1))])),
            ]),
        ] {
            #expect(throws: CloakError.self) { try BrowserSchema(bad) }
        }
        guard case var .object(members) = checkout.browserSchema(today: Self.today) else { return }
        members.removeAll { $0.key == "fields" }
        members.append(("fields", .array([.object([("name", .string("x")), ("type", .string("rocket"))])])))
        let error = #expect(throws: CloakError.self) { try BrowserSchema(.object(members)) }
        #expect(error?.message.contains("fields[0]") == true)
        // A hostile brand (negative or huge lengths) is refused, never trapping a client later.
        for (lengths, cvc) in [([-1], [3]), ([16], [-3]), ([1 << 40], [3]), ([], [3]), ([16], [1 << 30])] {
            guard case var .object(doc) = checkout.browserSchema(today: Self.today) else { return }
            let brand: JSONValue = .object([
                ("id", .string("evil")), ("name", .string("Evil")), ("regex", .string("^9")),
                ("lengths", .array(lengths.map(JSONValue.int))), ("cvcLengths", .array(cvc.map(JSONValue.int))),
                ("luhn", .bool(true)), ("pattern", .string("####")),
            ])
            doc.removeAll { $0.key == "brands" }
            doc.append(("brands", .array([brand])))
            #expect(throws: CloakError.self) { try BrowserSchema(.object(doc)) }
        }
    }
}
