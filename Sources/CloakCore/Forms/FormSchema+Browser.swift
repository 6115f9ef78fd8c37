/// A form's schema as data for Cloak Elements' frames (`GET /elements/v1/forms/{form}`): what
/// the browser's rule engine needs to compute a field's state exactly as ``FormValidation``
/// does, with every default resolved here so the browser keeps no copy of the brand table, the
/// default patterns or the default rules (docs/elements.md).
///
/// Holds no secret: field names, types, patterns and rules are what any page using the form
/// sees in its answers.
extension FormSchema {
    public func browserSchema(today: CalendarDate) -> JSONValue {
        .object([
            ("form", .string(name)),
            ("today", Self.browserDate(today)),
            ("brands", .array(brands.models.map(Self.browserBrand))),
            ("unknownBrand", Self.browserBrand(.unknown)),
            ("fields", .array(fields.indices.map(browserField))),
        ])
    }

    private func browserField(_ index: Int) -> JSONValue {
        let field = fields[index]
        let linkedCVC = field.type == .cvc && field.cardField != nil
        let pattern: JSONValue
        let rules: JSONValue
        switch field.type {
        case .cardNumber:
            pattern = .null  // the detected brand's layout, as FieldProcessor lays it out
            rules = .array((field.rules ?? [PaymentCardRule()]).map(Self.browserRule))
        case .cvc where linkedCVC:
            pattern = .null  // the linked card's brand decides pattern and rules
            rules = .null
        default:
            pattern = .string((field.formatPattern ?? FormatPattern.defaultPattern(for: field.type)).pattern)
            rules = .array((field.rules ?? DefaultRules.rules(for: field.type)).map(Self.browserRule))
        }
        let mask: JSONValue =
            field.mask.map { mask in
                .array(
                    mask.positions.map { position in
                        switch position {
                        case let .literal(c): return .object([("literal", .string(String(c)))])
                        case let .pattern(p):
                            return .object([
                                ("regex", .string(p.source)), ("browser", .bool(BrowserRegex.isSafe(p.source))),
                            ])
                        }
                    })
            } ?? .null
        let transform: JSONValue =
            field.transform.map { t in
                let plain = !t.replacement.contains("$") && !t.replacement.contains("\\")
                return .object([
                    ("matcher", .string(t.matcher.source)), ("replacement", .string(t.replacement)),
                    ("browser", .bool(plain && BrowserRegex.isSafeTransform(t.matcher.source))),
                ])
            } ?? .null
        let cardField: JSONValue = linkedCVC ? (cardFieldIndex[index].map { .string(fields[$0].name) } ?? .null) : .null
        return .object([
            ("name", .string(field.name)),
            ("type", .string(field.type.rawValue)),
            ("required", .bool(field.isRequired)),
            ("requiredValidOnly", .bool(field.isRequiredValidOnly)),
            ("pattern", pattern),
            ("divider", .string(field.effectiveDivider)),
            ("rules", rules),
            ("mask", mask),
            ("transform", transform),
            ("cardField", cardField),
            ("autocomplete", .string(Self.autocomplete(field.type))),
            ("inputmode", .string(Self.isNumeric(field) ? "numeric" : "text")),
            ("title", .string(Self.title(field))),
            ("file", field.fileRules.map(Self.browserFileRules) ?? .null),
            ("accept", field.accept?.json ?? .null),
        ])
    }

    /// A file field's rules: `{"maxBytes", "types", "maxFiles", "required"}`.
    static func browserFileRules(_ rules: FileRules) -> JSONValue {
        .object([
            ("maxBytes", .int(rules.maxBytes)), ("types", .array(rules.types.map { .string($0.rawValue) })),
            ("maxFiles", .int(rules.maxFiles)), ("required", .bool(rules.isRequired)),
        ])
    }

    /// The HTML `autocomplete` token for a field of this type.
    static func autocomplete(_ type: FieldType) -> String {
        switch type {
        case .cardNumber: return "cc-number"
        case .expDate: return "cc-exp"
        case .cvc: return "cc-csc"
        case .cardHolderName: return "cc-name"
        case .none, .ssn, .date, .file: return "off"
        }
    }

    private static func isNumeric(_ field: FieldSchema) -> Bool {
        switch field.type {
        case .cardNumber, .expDate, .cvc, .ssn, .date: return true
        case .none, .cardHolderName, .file:
            guard let pattern = field.formatPattern?.pattern, !pattern.isEmpty else { return false }
            return pattern.allSatisfy { $0 == "#" || !FormatPattern.placeholderCharacters.contains($0) }
        }
    }

    /// What a screen reader announces for the field's frame.
    static func title(_ field: FieldSchema) -> String {
        switch field.type {
        case .cardNumber: return "Card number"
        case .expDate: return "Expiration date"
        case .cvc: return "Security code"
        case .cardHolderName: return "Cardholder name"
        case .ssn: return "Social Security number"
        case .date: return "Date"
        case .file: return "Document"
        case .none: return field.name
        }
    }

    static func browserDate(_ d: CalendarDate) -> JSONValue {
        .object([("year", .int(d.year)), ("month", .int(d.month)), ("day", .int(d.day))])
    }

    static func browserBrand(_ model: PaymentCardModel) -> JSONValue {
        .object([
            ("id", .string(model.brand.id)),
            ("name", .string(model.name)),
            ("regex", .string(model.matcher.regex.source)),
            ("browser", .bool(BrowserRegex.isSafe(model.matcher.regex.source))),
            ("lengths", .array(model.cardNumberLengths.map(JSONValue.int))),
            ("cvcLengths", .array(model.cvcLengths.map(JSONValue.int))),
            ("luhn", .bool(model.luhn)),
            ("pattern", .string(model.formatPattern.pattern)),
            ("eightDigitBin", .bool(model.brand.hasEightDigitBIN)),
        ])
    }

    /// One rule as data; a rule the browser has no engine for asks the server.
    static func browserRule(_ rule: any ValidationRule) -> JSONValue {
        let error: (key: String, value: JSONValue) = ("error", .string(rule.error))
        switch rule {
        case let r as PatternRule:
            return .object([
                ("kind", .string("pattern")), ("regex", .string(r.pattern.source)),
                ("browser", .bool(BrowserRegex.isSafe(r.pattern.source))), error,
            ])
        case let r as LengthRule:
            return .object([
                ("kind", .string("length")), ("min", .int(r.min)), ("max", r.max == Int.max ? .null : .int(r.max)),
                error,
            ])
        case let r as LengthMatchRule:
            return .object([("kind", .string("lengthMatch")), ("lengths", .array(r.lengths.map(JSONValue.int))), error])
        case is LuhnRule:
            return .object([("kind", .string("luhn")), error])
        case is ABARoutingNumberRule:
            return .object([("kind", .string("aba")), error])
        case let r as PaymentCardRule:
            return .object([
                ("kind", .string("paymentCard")), ("validateUnknownBrand", .bool(r.validateUnknownCardBrand)), error,
            ])
        case let r as CardExpirationDateRule:
            return .object([("kind", .string("expDate")), ("format", .string(r.format.rawValue)), error])
        case let r as DateRangeRule:
            return .object([
                ("kind", .string("dateRange")), ("format", .string(r.format.rawValue)),
                ("start", r.start.map(browserDate) ?? .null), ("end", r.end.map(browserDate) ?? .null), error,
            ])
        default:
            return .object([("kind", .string("server"))])
        }
    }
}
