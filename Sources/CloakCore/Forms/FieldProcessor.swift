/// Turns one submitted value into a ``FieldResult`` the way a VGS Collect or Basis Theory field
/// would: mask, transform, format pattern, rules, output layout, date conversion.
enum FieldProcessor {
    /// - Parameters:
    ///   - linkedCard: for a CVC with `card_field`, the card field's detected brand.
    static func process(
        _ definition: FieldDefinition, input: String?, linkedCard: PaymentCardModel?, context: ValidationContext
    ) -> FieldResult {
        let field = definition.schema
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
        var detectedFrom: (digits: String, model: PaymentCardModel)?
        let pattern: FormatPattern
        var rules: [any ValidationRule]
        switch field.type {
        case .cardNumber:
            let digits = FormatPattern.unknownCardLayout.rawText(value)
            let model = context.brands.detect(digits)
            detectedFrom = (digits, model)
            // The SDK lays a card number out in its detected brand's pattern, whatever was configured.
            pattern = model.formatPattern
            rules = field.rules ?? [PaymentCardRule()]
        case .cvc:
            if field.cardField != nil {
                // A linked card field overwrites the CVC's pattern and rules with its brand's (SDK).
                let model = linkedCard ?? .unknown
                pattern = model.cvcFormatPattern
                rules = [PatternRule(pattern: FieldProcessor.cvcPattern), LengthMatchRule(lengths: model.cvcLengths)]
            } else {
                pattern = field.formatPattern ?? PaymentCardModel.unknown.cvcFormatPattern
                rules = field.rules ?? DefaultRules.rules(for: .cvc)
            }
        default:
            pattern = field.formatPattern ?? FormatPattern.defaultPattern(for: field.type)
            rules = field.rules ?? DefaultRules.rules(for: field.type)
        }

        var errors: [String]
        let raw: String
        if let detectedFrom {
            // The brand's layout keeps the same digits but for numbers longer than it. When the
            // digits read are all the input has (fewer than the wide layout takes) and the layout
            // is digit placeholders only, at least as many, they are its raw text as they are.
            let count = detectedFrom.digits.utf8.count
            let allDigits = count < FormatPattern.unknownCardLayout.placeholderCount
            raw = allDigits && pattern.keepsDigits(count: count) ? detectedFrom.digits : pattern.rawText(value)
            let model = detectedFrom.digits == raw ? detectedFrom.model : context.brands.detect(raw)
            cardModel = model
            var ruleContext = context
            ruleContext.detectedCard = (raw, model)
            errors = validationErrors(of: raw, rules: rules, in: ruleContext)
        } else {
            // Other fields validate in the caller's context as it is: no copy per field.
            raw = pattern.rawText(value)
            errors = validationErrors(of: raw, rules: rules, in: context)
        }
        if !maskComplete { errors.append(ValidationErrorString.maskIncomplete) }

        var output = pattern.outputText(raw: raw, divider: field.effectiveDivider)
        switch (field.inputDateFormat, field.outputDateFormat) {
        case let (.expDate(from)?, .expDate(to)?): output = convertExpDate(output, from: from, to: to)
        case let (.date(from)?, .date(to)?): output = convertDate(output, from: from, to: to)
        default: break
        }
        // The attributes of the digits the state shows as `bin`, and no more (issue 48).
        var attributes: CardAttributes?
        let showsCard = errors.isEmpty
        if let table = context.bins, let cardModel, showsCard {
            let shown = FieldResult.binLength(cardModel, length: raw.utf8.count)
            if shown >= BinTable.shortestRange { attributes = table.lookup(raw.utf8.prefix(shown)) }
        }
        // A card its `accept` rule refuses still shows its bin and attributes: the page can say why.
        if let rule = field.accept, let attributes, !rule.accepts(attributes) { errors.append(rule.error) }
        return FieldResult(
            definition: definition, isPresent: input != nil, rawText: raw, outputText: output, validationErrors: errors,
            cardModel: cardModel, cardAttributes: attributes, showsCard: showsCard)
    }

    static let cvcPattern = try! RegexPattern(FieldType.cvc.defaultRegex)
}

extension FormatPattern {
    private static let defaults = FieldType.allCases.map { FormatPattern($0.defaultFormatPattern) }

    /// Each type's default pattern, built once.
    static func defaultPattern(for type: FieldType) -> FormatPattern {
        defaults[FieldType.allCases.firstIndex(of: type)!]
    }

    /// Wide enough for any brand: used to read the digits a brand is detected from.
    static let unknownCardLayout = FormatPattern("#### #### #### #### ###")
}

/// The SDK's `defaultValidation` per field type, compiled once.
enum DefaultRules {
    private static func pattern(_ t: FieldType) -> PatternRule {
        PatternRule(pattern: try! RegexPattern(t.defaultRegex))
    }
    private static let cardHolderName: [any ValidationRule] = [pattern(.cardHolderName)]
    private static let ssn: [any ValidationRule] = [pattern(.ssn)]
    private static let expDate: [any ValidationRule] = [pattern(.expDate), CardExpirationDateRule()]
    private static let date: [any ValidationRule] = [pattern(.date), DateRangeRule()]
    private static let cardNumber: [any ValidationRule] = [PaymentCardRule()]
    private static let cvc: [any ValidationRule] = [pattern(.cvc), LengthMatchRule(lengths: [3, 4])]

    static func rules(for type: FieldType) -> [any ValidationRule] {
        switch type {
        case .none, .file: return []
        case .cardHolderName: return cardHolderName
        case .ssn: return ssn
        case .expDate: return expDate
        case .date: return date
        case .cardNumber: return cardNumber
        case .cvc: return cvc
        }
    }
}
