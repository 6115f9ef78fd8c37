/// One validation rule of the SDK: a pure check of a field's raw text.
///
/// Rules take everything they depend on, the current date and the card brands included, from
/// the ``ValidationContext`` argument: CloakCore never reads the clock.
public protocol ValidationRule: Sendable {
    /// The error string reported when the rule fails (e.g. `PATTERN_VALIDATION_ERROR`).
    var error: String { get }
    func validate(_ input: String, in context: ValidationContext) -> Bool
}

/// What a rule may need besides the input.
public struct ValidationContext: Sendable {
    /// Today, in the calendar the operator chose; decides the expiry window.
    public var today: CalendarDate
    /// The brands the form accepts, in detection order.
    public var brands: CardBrandTable
    /// The BIN table a card number's state takes its attributes from (issue 48); nil: none.
    public var bins: BinTable?

    /// The brand the field being validated was detected as, so its rules do not detect it again.
    var detectedCard: (number: String, model: PaymentCardModel)?

    public init(today: CalendarDate, brands: CardBrandTable = .standard) {
        self.today = today
        self.brands = brands
    }

    /// The brand of `number`: the one already detected for it, or the first that matches.
    func cardModel(for number: String) -> PaymentCardModel {
        if let detectedCard, detectedCard.number == number { return detectedCard.model }
        return brands.detect(number)
    }
}

/// The error strings of `VGSValidationErrorType`, plus Cloak's one for Basis Theory masks.
public enum ValidationErrorString {
    public static let pattern = "PATTERN_VALIDATION_ERROR"
    public static let length = "LENGTH_VALIDATION_ERROR"
    public static let lengthMatch = "LENGTH_RANGE_MATCH_VALIDATION_ERROR"
    public static let expDate = "EXPIRATION_DATE_VALIDATION_ERROR"
    public static let date = "DATE_VALIDATION_ERROR"
    public static let cardNumber = "CARD_NUMBER_VALIDATION_ERROR"
    public static let luhnCheck = "LUHN_ALGORITHM_CHECK_VALIDATION_ERROR"
    public static let abaRoutingNumber = "ABA_ROUTING_NUMBER_VALIDATION_ERROR"
    /// The input does not fill a Basis Theory mask exactly (incomplete, or longer than the mask).
    public static let maskIncomplete = "MASK_INCOMPLETE_VALIDATION_ERROR"
}

/// Runs `rules` in order and returns the error of every failing one (`VGSValidator.validate`).
public func validationErrors(of input: String, rules: [any ValidationRule], in context: ValidationContext) -> [String] {
    var errors: [String] = []
    for i in rules.indices where !rules[i].validate(input, in: context) {
        errors.append(rules[i].error)
    }
    return errors
}
