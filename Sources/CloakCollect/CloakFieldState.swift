import CloakCore

/// One field's state: exactly the members of that field's state in `POST /forms/{form}/validate`,
/// with the server's names, plus `isFocused`. For the same text, with the field not focused, it
/// equals what the server answers, member by member: the client runs the server's own rule engine
/// (CloakCore) on the schema the server serves.
///
/// While the field has focus, a card number's `last4` stays empty until the number has its
/// brand's longest length (Cloak Elements' rule: a number typed digit by digit is valid at
/// several lengths, and one last four per number is what is shown).
///
/// A card number's `cardAttributes` come from the server's BIN table, asked for by the `bin` the
/// state shows (`GET /elements/v1/bins/{bin}`): nil until the server has answered (the field's
/// `onChange` is called again then).
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
    /// Card numbers: the BIN, when the number is valid or refused by its `accept` rule alone
    /// (`""` otherwise): 8 digits for a Visa, Visa Electron, Mastercard or Maestro number of 16
    /// digits or more (none for a shorter one), else 6.
    public var bin: String?
    /// Card numbers and SSNs: the last four, when valid (`""` otherwise).
    public var last4: String?
    /// Card numbers: what the server's BIN table says of the cards of ``bin`` (issue 48: brand,
    /// funding, segment, issuer, country, currency, product); nil when no `bin` shows, no range
    /// holds it, or the server has not answered (yet). A card the field's `accept` rule refuses
    /// has the rule's error in ``validationErrors``, and still shows ``bin``, ``last4`` and these.
    public var cardAttributes: CardAttributes?
    public var isFocused: Bool

    public init(
        isRequired: Bool = false, isRequiredValidOnly: Bool = false, isValid: Bool = false, isEmpty: Bool = true,
        isDirty: Bool = false, inputLength: Int = 0, validationErrors: [String] = [], cardBrand: String? = nil,
        cardBrandName: String? = nil, bin: String? = nil, last4: String? = nil,
        cardAttributes: CardAttributes? = nil, isFocused: Bool = false
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
        self.cardAttributes = cardAttributes
        self.isFocused = isFocused
    }

    enum CodingKeys: String, CodingKey {
        case isRequired, isRequiredValidOnly, isValid, isEmpty, isDirty, inputLength, validationErrors
        case cardBrand, cardBrandName, bin, last4, cardAttributes, isFocused
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
        // As the server writes them: an object of strings (CardAttributes.json).
        if let members = try c.decodeIfPresent([String: String].self, forKey: .cardAttributes) {
            let json = JSONValue.object(members.map { (key: $0.key, value: JSONValue.string($0.value)) })
            guard let attributes = CardAttributes(json: json) else {
                throw DecodingError.dataCorruptedError(
                    forKey: .cardAttributes, in: c, debugDescription: "not a card's attributes")
            }
            cardAttributes = attributes
        } else {
            cardAttributes = nil
        }
        isFocused = try c.decodeIfPresent(Bool.self, forKey: .isFocused) ?? false
    }

    /// The server's members (``cardAttributes`` as it writes them), and `isFocused`.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(isRequired, forKey: .isRequired)
        try c.encode(isRequiredValidOnly, forKey: .isRequiredValidOnly)
        try c.encode(isValid, forKey: .isValid)
        try c.encode(isEmpty, forKey: .isEmpty)
        try c.encode(isDirty, forKey: .isDirty)
        try c.encode(inputLength, forKey: .inputLength)
        try c.encode(validationErrors, forKey: .validationErrors)
        try c.encodeIfPresent(cardBrand, forKey: .cardBrand)
        try c.encodeIfPresent(cardBrandName, forKey: .cardBrandName)
        try c.encodeIfPresent(bin, forKey: .bin)
        try c.encodeIfPresent(last4, forKey: .last4)
        if let cardAttributes {
            var members: [String: String] = [:]
            for (key, value) in cardAttributes.json.objectMembers ?? [] { members[key] = value.stringValue }
            try c.encode(members, forKey: .cardAttributes)
        }
        try c.encode(isFocused, forKey: .isFocused)
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
