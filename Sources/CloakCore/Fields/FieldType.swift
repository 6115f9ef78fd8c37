/// The kind of a form field, with the defaults the VGS Collect SDK gives each kind.
public enum FieldType: String, Sendable, CaseIterable {
    case none
    case cardNumber
    case expDate
    case date
    case cvc
    case cardHolderName
    case ssn
    /// Files (issue 47): no text; judged by ``FileRules`` as their bytes arrive.
    case file

    /// The format pattern used when the configuration sets none.
    ///
    /// For `cardNumber` this is replaced by the detected brand's pattern, for `cvc` with a
    /// linked card field by the brand's CVC pattern.
    public var defaultFormatPattern: String {
        switch self {
        case .none, .cardHolderName, .file: return ""
        case .cardNumber: return "#### #### #### ####"
        case .expDate: return "##/##"
        case .date: return "##-##-####"
        case .cvc: return "####"
        case .ssn: return "###-##-####"
        }
    }

    public var defaultDivider: String {
        switch self {
        case .expDate, .date: return "/"
        case .ssn: return "-"
        default: return ""
        }
    }

    /// The SDK's `defaultRegex` for each type (not used by the default card-number validation).
    public var defaultRegex: String {
        switch self {
        case .none, .file: return ""
        case .cardNumber:
            return
                "^(?:4[0-9]{12}(?:[0-9]{3})?|[25][1-7][0-9]{14}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35\\d{3})\\d{11})$"
        case .expDate: return "^(0[1-9]|1[0-2])\\/?([0-9]{4}|[0-9]{2})$"
        case .date: return "^([0-9]{4}|[0-9]{2})\\/?([0-9]{2})\\/?([0-9]{4}|[0-9]{2})$"
        case .cardHolderName: return "^([a-zA-Z0-9\\ \\,\\.\\-\\']{2,})$"
        case .ssn: return "^(?!(000|666|9))(\\d{3}(-|\\s)?(?!(00))\\d{2}(-|\\s)?(?!(0000))\\d{4})$"
        case .cvc: return "\\d*$"
        }
    }

    /// Card numbers and CVCs: without tokenization they are dropped from tokenize results.
    public var isSensitive: Bool { self == .cardNumber || self == .cvc }
}
