/// A payment card brand: one of the SDK's built-in brands, a custom brand from configuration,
/// or `unknown`.
public struct CardBrand: Sendable, Hashable, CustomStringConvertible {
    /// The SDK case name (`visa`, `mastercard`, …, `unknown`) or, for a custom brand, its name.
    public let id: String
    public let isCustom: Bool

    public init(id: String, isCustom: Bool = false) {
        self.id = id
        self.isCustom = isCustom
    }

    public static let elo = CardBrand(id: "elo")
    public static let visaElectron = CardBrand(id: "visaElectron")
    public static let maestro = CardBrand(id: "maestro")
    public static let forbrugsforeningen = CardBrand(id: "forbrugsforeningen")
    public static let dankort = CardBrand(id: "dankort")
    public static let visa = CardBrand(id: "visa")
    public static let mastercard = CardBrand(id: "mastercard")
    public static let amex = CardBrand(id: "amex")
    public static let hipercard = CardBrand(id: "hipercard")
    public static let dinersClub = CardBrand(id: "dinersClub")
    public static let discover = CardBrand(id: "discover")
    public static let unionpay = CardBrand(id: "unionpay")
    public static let jcb = CardBrand(id: "jcb")
    public static let unknown = CardBrand(id: "unknown")

    public static func custom(_ name: String) -> CardBrand { CardBrand(id: name, isCustom: true) }

    public var description: String { id }

    /// Brands whose BIN is the first eight digits once the number has 16 or more (field state).
    public var hasEightDigitBIN: Bool {
        self == .visa || self == .visaElectron || self == .mastercard || self == .maestro
    }
}
