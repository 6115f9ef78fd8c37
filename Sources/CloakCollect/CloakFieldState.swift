/// One field's state: exactly the members of that field's state in `POST /forms/{form}/validate`,
/// with the server's names, plus `isFocused`. For the same text, with the field not focused, it
/// equals what the server answers, member by member: the client runs the server's own rule engine
/// (CloakCore) on the schema the server serves.
///
/// While the field has focus, a card number's `last4` stays empty until the number has its
/// brand's longest length (Cloak Elements' rule: a number typed digit by digit is valid at
/// several lengths, and one last four per number is what is shown).
public struct CloakFieldState: Sendable, Equatable, Codable {
    public var isRequired: Bool
    public var isRequiredValidOnly: Bool
    public var isValid: Bool
    public var isEmpty: Bool
    /// The field was edited (a submission sends exactly the dirty fields).
    public var isDirty: Bool
    /// Characters of the raw text (what the rules read: without the layout's dividers).
    public var inputLength: Int
    /// The failing rules' error strings (`PATTERN_VALIDATION_ERROR`, …), in rule order.
    public var validationErrors: [String]
    /// Card numbers: the detected brand's id (`visa`, `amex`, …, `unknown`) and name.
    public var cardBrand: String?
    public var cardBrandName: String?
    /// Card numbers: the BIN, when the number is valid (`""` otherwise).
    public var bin: String?
    /// Card numbers and SSNs: the last four, when valid (`""` otherwise).
    public var last4: String?
    public var isFocused: Bool

    public init(
        isRequired: Bool = false, isRequiredValidOnly: Bool = false, isValid: Bool = false, isEmpty: Bool = true,
        isDirty: Bool = false, inputLength: Int = 0, validationErrors: [String] = [], cardBrand: String? = nil,
        cardBrandName: String? = nil, bin: String? = nil, last4: String? = nil, isFocused: Bool = false
    ) {
        self.isRequired = isRequired
        self.isRequiredValidOnly = isRequiredValidOnly
        self.isValid = isValid
        self.isEmpty = isEmpty
        self.isDirty = isDirty
        self.inputLength = inputLength
        self.validationErrors = validationErrors
        self.cardBrand = cardBrand
        self.cardBrandName = cardBrandName
        self.bin = bin
        self.last4 = last4
        self.isFocused = isFocused
    }

    enum CodingKeys: String, CodingKey {
        case isRequired, isRequiredValidOnly, isValid, isEmpty, isDirty, inputLength, validationErrors
        case cardBrand, cardBrandName, bin, last4, isFocused
    }

    /// Reads the server's state too, which has no `isFocused` (false).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        isRequired = try c.decode(Bool.self, forKey: .isRequired)
        isRequiredValidOnly = try c.decode(Bool.self, forKey: .isRequiredValidOnly)
        isValid = try c.decode(Bool.self, forKey: .isValid)
        isEmpty = try c.decode(Bool.self, forKey: .isEmpty)
        isDirty = try c.decode(Bool.self, forKey: .isDirty)
        inputLength = try c.decode(Int.self, forKey: .inputLength)
        validationErrors = try c.decode([String].self, forKey: .validationErrors)
        cardBrand = try c.decodeIfPresent(String.self, forKey: .cardBrand)
        cardBrandName = try c.decodeIfPresent(String.self, forKey: .cardBrandName)
        bin = try c.decodeIfPresent(String.self, forKey: .bin)
        last4 = try c.decodeIfPresent(String.self, forKey: .last4)
        isFocused = try c.decodeIfPresent(Bool.self, forKey: .isFocused) ?? false
    }
}

/// The form's state: the SDK's pre-send check and every field's state.
public struct CloakFormState: Sendable, Equatable {
    /// False when a `required` field is empty, a `required_valid_only` field is invalid, or a
    /// file field is invalid (what the server would refuse with 1001).
    public var isValid: Bool
    /// The text fields' states.
    public var fields: [String: CloakFieldState]
    /// The file fields' states.
    public var files: [String: CloakFileFieldState]

    public init(isValid: Bool, fields: [String: CloakFieldState], files: [String: CloakFileFieldState] = [:]) {
        self.isValid = isValid
        self.fields = fields
        self.files = files
    }
}
