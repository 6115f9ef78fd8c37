import Testing

@testable import CloakCore

/// The form schema Cloak Elements' rule engine runs: every default resolved on the server.
@Suite struct BrowserSchemaTests {
    static let today = CalendarDate(year: 2026, month: 11, day: 23)!

    static func form() throws -> FormSchema {
        var number = FieldSchema(name: "number", type: .cardNumber)
        number.isRequired = true
        var cvc = FieldSchema(name: "cvc", type: .cvc)
        cvc.cardField = "number"
        var looseCVC = FieldSchema(name: "cvc2", type: .cvc)
        looseCVC.cardField = "nowhere"
        var phone = FieldSchema(name: "phone", type: .none)
        phone.mask = InputMask([.literal("("), .pattern(try RegexPattern(#"\d"#))])
        phone.transform = InputTransform(matcher: try RegexPattern("[()-]"), replacement: "$1")
        phone.rules = [PatternRule(pattern: try RegexPattern(#"^[\p{L}]+$"#), error: "NAME")]
        var account = FieldSchema(name: "account", type: .none)
        account.formatPattern = FormatPattern("#########")
        account.rules = [ABARoutingNumberRule(), LengthRule(min: 9)]
        return FormSchema(
            name: "f",
            fields: [
                number, cvc, looseCVC, FieldSchema(name: "exp", type: .expDate), phone, account,
                FieldSchema(name: "birth", type: .date),
            ])
    }

    func field(_ schema: JSONValue, _ name: String) throws -> JSONValue {
        guard case let .array(fields)? = schema["fields"] else { throw Failure() }
        return try #require(fields.first { $0["name"] == .string(name) })
    }

    struct Failure: Error {}

    @Test func defaultsAreResolvedAndNothingIsLeftToTheBrowser() throws {
        let schema = try Self.form().browserSchema(today: Self.today)
        #expect(schema["today"] == .object([("year", .int(2026)), ("month", .int(11)), ("day", .int(23))]))
        guard case let .array(brands)? = schema["brands"] else { throw Failure() }
        #expect(brands.count == PaymentCardModel.builtIn.count)
        #expect(
            brands.first?["id"] == .string("elo")
                && schema["unknownBrand"]?["cvcLengths"] == .array([.int(3), .int(4)]))

        let number = try field(schema, "number")
        #expect(
            number["pattern"] == .null && number["autocomplete"] == .string("cc-number")
                && number["required"] == .bool(true))
        #expect(
            number["rules"]
                == .array([
                    .object([
                        ("kind", .string("paymentCard")), ("validateUnknownBrand", .bool(false)),
                        ("error", .string("CARD_NUMBER_VALIDATION_ERROR")),
                    ])
                ]))
        let cvc = try field(schema, "cvc")
        #expect(cvc["rules"] == .null && cvc["pattern"] == .null && cvc["cardField"] == .string("number"))
        #expect(cvc["autocomplete"] == .string("cc-csc") && cvc["inputmode"] == .string("numeric"))
        // A card_field naming no card field: the unknown brand's CVC, as FieldProcessor does.
        let loose = try field(schema, "cvc2")
        #expect(loose["rules"] == .null && loose["cardField"] == .null)

        let exp = try field(schema, "exp")
        #expect(exp["pattern"] == .string("##/##") && exp["divider"] == .string("/"))
        guard case let .array(expRules)? = exp["rules"] else { throw Failure() }
        #expect(expRules.map { $0["kind"] } == [.string("pattern"), .string("expDate")])
        #expect(expRules[0]["browser"] == .bool(true) && expRules[1]["format"] == .string("shortYear"))

        let birth = try field(schema, "birth")
        guard case let .array(dateRules)? = birth["rules"] else { throw Failure() }
        #expect(
            dateRules[1]
                == .object([
                    ("kind", .string("dateRange")), ("format", .string("mmddyyyy")), ("start", .null), ("end", .null),
                    ("error", .string("DATE_VALIDATION_ERROR")),
                ]))
    }

    @Test func whatJavaScriptReadsOtherwiseIsMarkedForTheServer() throws {
        let schema = try Self.form().browserSchema(today: Self.today)
        let phone = try field(schema, "phone")
        #expect(
            phone["mask"]
                == .array([
                    .object([("literal", .string("("))]),
                    .object([("regex", .string(#"\d"#)), ("browser", .bool(true))]),
                ]))
        // `$1` is a template in ICU and in JavaScript, read differently: the server decides.
        #expect(phone["transform"]?["browser"] == .bool(false))
        guard case let .array(rules)? = phone["rules"] else { throw Failure() }
        #expect(rules[0]["browser"] == .bool(false) && rules[0]["error"] == .string("NAME"))
        #expect(phone["inputmode"] == .string("text") && phone["autocomplete"] == .string("off"))

        let account = try field(schema, "account")
        #expect(account["inputmode"] == .string("numeric") && account["pattern"] == .string("#########"))
        #expect(
            account["rules"]
                == .array([
                    .object([("kind", .string("aba")), ("error", .string("ABA_ROUTING_NUMBER_VALIDATION_ERROR"))]),
                    .object([
                        ("kind", .string("length")), ("min", .int(9)), ("max", .null),
                        ("error", .string("LENGTH_VALIDATION_ERROR")),
                    ]),
                ]))
    }

    @Test func aRuleTheBrowserHasNoEngineForAsksTheServer() {
        struct Custom: ValidationRule {
            let error = "X"
            func validate(_ input: String, in context: ValidationContext) -> Bool { true }
        }
        #expect(FormSchema.browserRule(Custom()) == .object([("kind", .string("server"))]))
    }
}
