/// What a BIN table says about the cards of one account range (issue 48): the network's brand,
/// how the card is funded, for whom, who issues it, where, in what currency, and its product.
/// Every member is optional: a table says what it knows.
public struct CardAttributes: Sendable, Hashable {
    public enum Funding: String, Sendable, CaseIterable {
        case credit, debit, prepaid, charge
        case deferredDebit = "deferred_debit"
    }

    public enum Segment: String, Sendable, CaseIterable {
        case consumer, commercial
    }

    public var brand: String?
    public var funding: Funding?
    public var segment: Segment?
    public var issuer: String?
    /// ISO 3166-1 alpha-2 (and `XK`).
    public var country: String?
    /// ISO 4217.
    public var currency: String?
    public var product: String?

    public init(
        brand: String? = nil, funding: Funding? = nil, segment: Segment? = nil, issuer: String? = nil,
        country: String? = nil, currency: String? = nil, product: String? = nil
    ) {
        self.brand = brand
        self.funding = funding
        self.segment = segment
        self.issuer = issuer
        self.country = country
        self.currency = currency
        self.product = product
    }

    /// As the field states and endpoints show it: the members it has, in a fixed order.
    public var json: JSONValue {
        var members: [(key: String, value: JSONValue)] = []
        if let brand { members.append(("brand", .string(brand))) }
        if let funding { members.append(("funding", .string(funding.rawValue))) }
        if let segment { members.append(("segment", .string(segment.rawValue))) }
        if let issuer { members.append(("issuer", .string(issuer))) }
        if let country { members.append(("country", .string(country))) }
        if let currency { members.append(("currency", .string(currency))) }
        if let product { members.append(("product", .string(product))) }
        return .object(members)
    }

    /// Read back from ``json`` (nil for anything else).
    public init?(json: JSONValue) {
        guard case .object(let members) = json else { return nil }
        self.init()
        for (key, value) in members {
            guard let text = value.stringValue else { return nil }
            switch key {
            case "brand": brand = text
            case "funding":
                guard let f = Funding(rawValue: text) else { return nil }
                funding = f
            case "segment":
                guard let s = Segment(rawValue: text) else { return nil }
                segment = s
            case "issuer": issuer = text
            case "country": country = text
            case "currency": currency = text
            case "product": product = text
            default: return nil
            }
        }
    }
}

/// A card field's `accept` rule (issue 48): the card's attributes must be among these, or the
/// field has `error`. Judged on the attributes of the BIN the state shows; a card the table says
/// nothing about (or no table) passes: the rule refuses what it knows to be refused.
public struct CardAcceptRule: Sendable, Equatable {
    public var funding: Set<CardAttributes.Funding>?
    /// ISO 3166-1 alpha-2 codes (and `XK`).
    public var countries: Set<String>?
    public var error: String

    public static let defaultError = "CARD_NOT_ACCEPTED"

    public init(
        funding: Set<CardAttributes.Funding>? = nil, countries: Set<String>? = nil, error: String = defaultError
    ) {
        self.funding = funding
        self.countries = countries
        self.error = error
    }

    /// Whether `attributes` pass (an attribute the table does not give passes).
    public func accepts(_ attributes: CardAttributes) -> Bool {
        if let funding, let given = attributes.funding, !funding.contains(given) { return false }
        if let countries, let given = attributes.country, !countries.contains(given) { return false }
        return true
    }

    /// As the served schema carries it: `{"funding", "countries", "error"}` (absent lists: null).
    public var json: JSONValue {
        .object([
            ("funding", funding.map { .strings($0.map(\.rawValue).sorted()) } ?? .null),
            ("countries", countries.map { .strings($0.sorted()) } ?? .null),
            ("error", .string(error)),
        ])
    }

    /// Read back from ``json``; nil for anything else.
    public init?(json: JSONValue) {
        guard case .object = json, let error = json["error"]?.stringValue else { return nil }
        func list(_ key: String) -> [String]?? {
            switch json[key] {
            case nil, .null?: return .some(nil)
            case .array(let items)?:
                let texts = items.compactMap(\.stringValue)
                return texts.count == items.count ? .some(texts) : nil
            default: return nil
            }
        }
        guard let funding = list("funding"), let countries = list("countries") else { return nil }
        var parsed: Set<CardAttributes.Funding>?
        if let funding {
            parsed = []
            for name in funding {
                guard let f = CardAttributes.Funding(rawValue: name) else { return nil }
                parsed!.insert(f)
            }
        }
        self.init(funding: parsed, countries: countries.map(Set.init), error: error)
    }

    /// Whether `code` is a country a rule may name.
    public static func isCountry(_ code: String) -> Bool { ISOCodes.countries.contains(code) }
}
