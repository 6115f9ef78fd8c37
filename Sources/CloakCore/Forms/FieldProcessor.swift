/// Turns one submitted value into a ``FieldResult`` the way a VGS Collect or Basis Theory field
/// would: mask, transform, format pattern, rules, output layout, date conversion.
enum FieldProcessor {
    /// - Parameters:
    ///   - linkedCard: for a CVC with `card_field`, the card field's detected brand.
    static func process(
        _ field: FieldSchema, input: String?, linkedCard: PaymentCardModel?, context: ValidationContext
    ) -> FieldResult {
        var value = input ?? ""
        var maskComplete = true
        if let mask = field.mask {
            let masked = mask.apply(value)
            value = masked.value
            maskComplete = masked.isComplete
        }
        if let transform = field.transform {
            value = transform.apply(value)
        }

        var cardModel: PaymentCardModel?
        let pattern: FormatPattern
        var rules: [any ValidationRule]
        switch field.type {
        case .cardNumber:
            let model = context.brands.detect(FormatPattern.unknownCardLayout.rawText(value))
            pattern = field.formatPattern ?? model.formatPattern
            rules = field.rules ?? [PaymentCardRule()]
        case .cvc:
            let model = field.cardField != nil ? (linkedCard ?? .unknown) : .unknown
            let lengths = model.cvcLengths
            pattern = field.formatPattern ?? model.cvcFormatPattern
            rules = field.rules ?? [PatternRule(pattern: FieldProcessor.cvcPattern), LengthMatchRule(lengths: lengths)]
        default:
            pattern = field.formatPattern ?? FormatPattern.defaults[field.type]!
            rules = field.rules ?? DefaultRules.rules(for: field.type)
        }

        let raw = pattern.rawText(value)
        if field.type == .cardNumber {
            cardModel = context.brands.detect(raw)
        }
        var errors = validationErrors(of: raw, rules: rules, in: context)
        if !maskComplete { errors.append(ValidationErrorString.maskIncomplete) }

        var output = pattern.outputText(raw: raw, divider: field.effectiveDivider)
        switch (field.inputDateFormat, field.outputDateFormat) {
        case let (.expDate(from)?, .expDate(to)?): output = convertExpDate(output, from: from, to: to)
        case let (.date(from)?, .date(to)?): output = convertDate(output, from: from, to: to)
        default: break
        }
        return FieldResult(
            schema: field, isPresent: input != nil, rawText: raw, outputText: output, validationErrors: errors,
            cardModel: cardModel)
    }

    static let cvcPattern = try! RegexPattern(FieldType.cvc.defaultRegex)
}

extension FormatPattern {
    /// Each type's default pattern, built once.
    static let defaults: [FieldType: FormatPattern] = Dictionary(
        uniqueKeysWithValues: FieldType.allCases.map { ($0, FormatPattern($0.defaultFormatPattern)) })

    /// Wide enough for any brand: used to read the digits a brand is detected from.
    static let unknownCardLayout = FormatPattern("#### #### #### #### ###")
}

/// The SDK's `defaultValidation` per field type, compiled once.
enum DefaultRules {
    private static let cached: [FieldType: [any ValidationRule]] = {
        func pattern(_ t: FieldType) -> PatternRule { PatternRule(pattern: try! RegexPattern(t.defaultRegex)) }
        return [
            .none: [],
            .cardHolderName: [pattern(.cardHolderName)],
            .ssn: [pattern(.ssn)],
            .expDate: [pattern(.expDate), CardExpirationDateRule()],
            .date: [pattern(.date), DateRangeRule()],
            .cardNumber: [PaymentCardRule()],
            .cvc: [pattern(.cvc), LengthMatchRule(lengths: [3, 4])],
        ]
    }()

    static func rules(for type: FieldType) -> [any ValidationRule] { cached[type] ?? [] }
}
