/// One field of a form, as configured: what it is, how it is laid out, and how it is checked.
public struct FieldSchema: Sendable {
    /// The field name; dot and `[index]` notation shape the output JSON.
    public var name: String
    public var type: FieldType
    /// Empty input is a 1001 failure.
    public var isRequired: Bool
    /// Invalid input is a 1001 failure.
    public var isRequiredValidOnly: Bool
    /// `nil`: the type's default (the brand's for cards); an empty pattern: the input as sent.
    public var formatPattern: FormatPattern?
    /// `nil`: the type's default divider.
    public var divider: String?
    /// `nil`: the type's default rules (dynamic for a CVC linked to a card field).
    public var rules: [any ValidationRule]?
    public var mask: InputMask?
    public var transform: InputTransform?
    public var inputDateFormat: DateFormatKind?
    public var outputDateFormat: DateFormatKind?
    public var serializer: FieldSerializer?
    /// For a CVC: the card-number field whose brand decides the CVC's lengths.
    public var cardField: String?
    public var tokenization: TokenizationSettings?
    /// A card number's `accept` rule on its BIN table attributes (issue 48).
    public var accept: CardAcceptRule?
    /// A `file` field's rules (nil for every other type).
    public var fileRules: FileRules?
    /// A `file` field's `ttl_s`: its files' records expire (content included) this long after
    /// the upload; nil keeps them until deleted (an anonymous upload is an intent all the same).
    public var retentionSeconds: Int?

    public init(name: String, type: FieldType) {
        self.name = name
        self.type = type
        self.isRequired = false
        self.isRequiredValidOnly = false
    }

    public var effectiveDivider: String { divider ?? type.defaultDivider }
}

/// A date format of either kind: expiry formats for `expDate` fields, date formats for `date` fields.
public enum DateFormatKind: Sendable, Equatable {
    case expDate(ExpDateFormat)
    case date(DateFormat)

    public init?(name: String, for type: FieldType) {
        switch type {
        case .expDate: guard let f = ExpDateFormat(rawValue: name) else { return nil }; self = .expDate(f)
        case .date: guard let f = DateFormat(rawValue: name) else { return nil }; self = .date(f)
        default: return nil
        }
    }
}

/// How a field's value is aliased: `{format, storage}` as the SDK sends it.
public struct TokenizationSettings: Sendable, Equatable {
    public enum Storage: String, Sendable, CaseIterable {
        case persistent = "PERSISTENT"
        case volatile = "VOLATILE"
    }

    public var format: AliasFormatName
    public var storage: Storage
    /// Card FPE aliases pass Luhn unless this is false.
    public var luhnValid: Bool

    public init(format: AliasFormatName, storage: Storage, luhnValid: Bool = true) {
        self.format = format
        self.storage = storage
        self.luhnValid = luhnValid
    }

    /// The SDK's defaults per field type (`VGS…TokenizationParameters`).
    public static func defaults(for type: FieldType) -> TokenizationSettings {
        switch type {
        case .cardNumber: return .init(format: .FPE_SIX_T_FOUR, storage: .persistent)
        case .cvc: return .init(format: .NUM_LENGTH_PRESERVING, storage: .volatile)
        default: return .init(format: .UUID, storage: .persistent)
        }
    }
}

/// `VGSVaultAliasFormat`: every alias format of the Vault API.
public enum AliasFormatName: String, Sendable, CaseIterable {
    case FPE_ACC_NUM_T_FOUR, FPE_ALPHANUMERIC_ACC_NUM_T_FOUR, FPE_SIX_T_FOUR, FPE_SSN_T_FOUR, FPE_T_FOUR
    case NUM_LENGTH_PRESERVING, PFPT, RAW_UUID, UUID, GENERIC_T_FOUR, ALPHANUMERIC_SIX_T_FOUR
    case ALPHANUMERIC_LENGTH_PRESERVING, ALPHANUMERIC_LENGTH_PRESERVING_T_FOUR, ALPHANUMERIC_SSN_T_FOUR
    case ALPHANUMERIC_LENGTH_PRESERVING_SIX_T_FOUR
}
