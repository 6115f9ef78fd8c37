/// The brands a form accepts, in detection order.
///
/// By default: custom brands from configuration first, then the SDK's built-in brands. When the
/// form lists `accepted` brands, that list replaces the default one and its order is the order of
/// detection (`validCardBrands`).
public struct CardBrandTable: Sendable {
    public let models: [PaymentCardModel]
    /// For each first digit, the indices of the models that may match a number starting with it,
    /// in detection order: a Visa number is tried against a handful of tables, not all of them.
    /// The eleventh list, every model, serves numbers that start with anything else (or nothing).
    private let candidates: [[Int]]

    public init(custom: [PaymentCardModel] = [], accepted: [CardBrand]? = nil) {
        let all = custom + PaymentCardModel.builtIn
        if let accepted {
            models = accepted.compactMap { brand in all.first { $0.brand == brand } }
        } else {
            models = all
        }
        candidates =
            (0...9).map { [models] digit in models.indices.filter { models[$0].matcher.admits(firstDigit: digit) } }
            + [Array(models.indices)]
    }

    public static let standard = CardBrandTable()

    /// The first model whose matcher accepts the number, or ``PaymentCardModel/unknown``.
    public func detect(_ number: String) -> PaymentCardModel {
        var copy = number
        return copy.withUTF8 { bytes in
            if bytes.allSatisfy({ $0 < 0x80 }) {
                let digit = bytes.first.map { Int($0 &- 0x30) } ?? 10
                for i in candidates[digit < 10 ? digit : 10] where models[i].matches(ascii: bytes, number: number) {
                    return models[i]
                }
                return .unknown
            }
            return models.first { $0.matcher.regex.wholeMatch(number) } ?? .unknown
        }
    }

    /// Every built-in brand identifier, for configuration checks.
    public static let builtInBrands: [CardBrand] = PaymentCardModel.builtIn.map(\.brand)
}
