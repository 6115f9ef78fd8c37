import CloakCore

extension FieldSchema {
    private static let ruleNames = [
        "pattern", "length", "length_match", "luhn", "payment_card", "exp_date", "date_range", "aba_routing",
    ]

    /// Reads `validation:`; each entry is a rule name or `{rule: parameters, error: STRING}`.
    static func readRules(_ node: ConfigNode, at p: String, type: FieldType, _ r: ConfigReader) -> [any ValidationRule]
    {
        guard let items = r.sequence(node, at: p) else { return [] }
        var rules: [any ValidationRule] = []
        for (i, item) in items.enumerated() {
            let ip = "\(p)[\(i)]"
            var name: String
            var params: ConfigNode?
            var error: String?
            switch item {
            case let .scalar(text, _):
                name = text
            default:
                guard let m = r.mapping(item, at: ip, allowed: Set(ruleNames + ["error"])) else { continue }
                error = r.string(m["error"], at: "\(ip).error")
                let present = ruleNames.filter { m[$0] != nil }
                guard present.count == 1 else {
                    r.issue(
                        ip, "each entry names exactly one rule (one of: \(ruleNames.joined(separator: ", ")))", item)
                    continue
                }
                name = present[0]
                params = m[name]
            }
            if let rule = makeRule(name, params, error: error, at: ip, type: type, r) { rules.append(rule) }
        }
        return rules
    }

    private static func makeRule(
        _ name: String, _ params: ConfigNode?, error: String?, at p: String, type: FieldType, _ r: ConfigReader
    ) -> (any ValidationRule)? {
        switch name {
        case "pattern":
            guard let source = r.string(params, at: "\(p).pattern") else {
                r.issue("\(p).pattern", "needs a regular expression")
                return nil
            }
            do {
                return PatternRule(pattern: try RegexPattern(source), error: error ?? ValidationErrorString.pattern)
            } catch let e {
                r.issue("\(p).pattern", e.description, params)
                return nil
            }
        case "length":
            let m = r.mapping(params, at: "\(p).length", allowed: ["min", "max"]) ?? [:]
            let min = r.int(m["min"], at: "\(p).length.min", min: 0) ?? 0
            let max = r.int(m["max"], at: "\(p).length.max", min: 0) ?? Int.max
            if min > max { r.issue("\(p).length", "min is greater than max", params) }
            return LengthRule(min: min, max: max, error: error ?? ValidationErrorString.length)
        case "length_match":
            let lengths = r.ints(params, at: "\(p).length_match") ?? []
            return LengthMatchRule(lengths: lengths, error: error ?? ValidationErrorString.lengthMatch)
        case "luhn":
            return LuhnRule(error: error ?? ValidationErrorString.luhnCheck)
        case "aba_routing":
            return ABARoutingNumberRule(error: error ?? ValidationErrorString.abaRoutingNumber)
        case "payment_card":
            let m = r.mapping(params, at: "\(p).payment_card", allowed: ["validate_unknown_brand"]) ?? [:]
            let unknown = m["validate_unknown_brand"].flatMap {
                r.bool($0, at: "\(p).payment_card.validate_unknown_brand")
            }
            return PaymentCardRule(
                validateUnknownCardBrand: unknown ?? false, error: error ?? ValidationErrorString.cardNumber)
        case "exp_date":
            let m = r.mapping(params, at: "\(p).exp_date", allowed: ["format"]) ?? [:]
            var format = ExpDateFormat.shortYear
            if let f = r.string(m["format"], at: "\(p).exp_date.format") {
                if let parsed = ExpDateFormat(rawValue: f) {
                    format = parsed
                } else {
                    r.issue(
                        "\(p).exp_date.format",
                        "unknown expiry format (expected one of: \(ExpDateFormat.allCases.map(\.rawValue).joined(separator: ", ")))",
                        m["format"])
                }
            }
            return CardExpirationDateRule(format: format, error: error ?? ValidationErrorString.expDate)
        case "date_range":
            let m = r.mapping(params, at: "\(p).date_range", allowed: ["format", "start", "end"]) ?? [:]
            var format = DateFormat.mmddyyyy
            if let f = r.string(m["format"], at: "\(p).date_range.format") {
                if let parsed = DateFormat(rawValue: f) {
                    format = parsed
                } else {
                    r.issue(
                        "\(p).date_range.format",
                        "unknown date format (expected one of: \(DateFormat.allCases.map(\.rawValue).joined(separator: ", ")))",
                        m["format"])
                }
            }
            var bounds: [CalendarDate?] = []
            for key in ["start", "end"] {
                guard let text = r.string(m[key], at: "\(p).date_range.\(key)") else { bounds.append(nil); continue }
                guard let d = CalendarDate(iso: text) else {
                    r.issue("\(p).date_range.\(key)", "expected a real date as yyyy-mm-dd", m[key])
                    bounds.append(nil)
                    continue
                }
                bounds.append(d)
            }
            if let s = bounds[0], let e = bounds[1], s > e { r.issue("\(p).date_range", "start is after end", params) }
            return DateRangeRule(
                format: format, start: bounds[0], end: bounds[1], error: error ?? ValidationErrorString.date)
        default:
            r.issue(p, "unknown validation rule \"\(name)\" (expected one of: \(ruleNames.joined(separator: ", ")))")
            return nil
        }
    }
}
