/// `VGSValidationRulePattern`: the whole input matches the regex.
public struct PatternRule: ValidationRule {
    public let pattern: RegexPattern
    public let error: String

    public init(pattern: RegexPattern, error: String = ValidationErrorString.pattern) {
        self.pattern = pattern
        self.error = error
    }

    public func validate(_ input: String, in context: ValidationContext) -> Bool { pattern.wholeMatch(input) }
}

/// `VGSValidationRuleLength`: `min <= count <= max`, counted in characters.
public struct LengthRule: ValidationRule {
    public let min: Int
    public let max: Int
    public let error: String

    public init(min: Int = 0, max: Int = Int.max, error: String = ValidationErrorString.length) {
        self.min = min
        self.max = max
        self.error = error
    }

    public func validate(_ input: String, in context: ValidationContext) -> Bool {
        let n = characterCount(input)
        return min <= n && n <= max
    }
}

/// `VGSValidationRuleLengthMatch`: the length is one of `lengths`.
public struct LengthMatchRule: ValidationRule {
    public let lengths: [Int]
    public let error: String

    public init(lengths: [Int], error: String = ValidationErrorString.lengthMatch) {
        self.lengths = lengths
        self.error = error
    }

    public func validate(_ input: String, in context: ValidationContext) -> Bool {
        lengths.contains(characterCount(input))
    }
}

/// `VGSValidationRuleLuhnCheck`.
public struct LuhnRule: ValidationRule {
    public let error: String

    public init(error: String = ValidationErrorString.luhnCheck) { self.error = error }

    public func validate(_ input: String, in context: ValidationContext) -> Bool { Luhn.isValid(input) }
}

/// `VGSValidationRuleABARoutingNumber`: nine digits with the ABA 3-7-1 checksum.
public struct ABARoutingNumberRule: ValidationRule {
    public let error: String

    public init(error: String = ValidationErrorString.abaRoutingNumber) { self.error = error }

    public func validate(_ input: String, in context: ValidationContext) -> Bool {
        let d = Array(input.utf8)
        guard d.count == 9, d.allSatisfy(isDigit) else { return false }
        let n = d.map { Int($0 - 48) }
        return (3 * (n[0] + n[3] + n[6]) + 7 * (n[1] + n[4] + n[7]) + (n[2] + n[5] + n[8])) % 10 == 0
    }
}

/// `VGSValidationRulePaymentCard`: detected brand, its lengths and its checksum.
public struct PaymentCardRule: ValidationRule {
    public let validateUnknownCardBrand: Bool
    public let error: String

    public init(validateUnknownCardBrand: Bool = false, error: String = ValidationErrorString.cardNumber) {
        self.validateUnknownCardBrand = validateUnknownCardBrand
        self.error = error
    }

    public func validate(_ input: String, in context: ValidationContext) -> Bool {
        let model = context.cardModel(for: input)
        if model.brand != .unknown {
            guard model.cardNumberLengths.contains(characterCount(input)) else { return false }
            return model.luhn ? Luhn.isValid(input) : true
        }
        guard validateUnknownCardBrand else { return false }
        let unknown = PaymentCardModel.unknown
        return unknown.matches(input) && unknown.cardNumberLengths.contains(characterCount(input))
            && Luhn.isValid(input)
    }
}

/// The number of characters of `text`: its byte count when it is ASCII without CR (the usual
/// raw text), counted by `String` otherwise (CR LF is one character, as are grapheme clusters).
func characterCount(_ text: String) -> Int {
    let utf8 = text.utf8
    return utf8.allSatisfy({ $0 < 0x80 && $0 != 0x0D }) ? utf8.count : text.count
}
