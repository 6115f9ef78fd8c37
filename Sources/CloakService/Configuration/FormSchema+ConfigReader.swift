import CloakCore

extension FormSchema {
    /// Reads `forms.<name>`:
    /// - `mapping_policy`: flatJSON | nestedJSON (default) | nestedJSONWithArrayMerge | nestedJSONWithArrayOverwrite
    /// - `card_brands.custom[]`: `name`, `regex`, `lengths`, `cvc_lengths` ([3]), `luhn` (true), `format_pattern`
    /// - `card_brands.accepted[]`: brand ids (`visa`, `amex`, …, or a custom name); replaces the detection list
    /// - `fields[]`: see ``FieldSchema/read(_:at:brands:_:)``
    static func read(name: String, _ node: ConfigNode, at path: String, _ r: ConfigReader) -> FormSchema? {
        guard let form = r.mapping(node, at: path, allowed: ["mapping_policy", "fields", "card_brands"]) else { return nil }
        var policy = MappingPolicy.nestedJSON
        if let text = r.string(form["mapping_policy"], at: "\(path).mapping_policy") {
            if let p = MappingPolicy(rawValue: text) {
                policy = p
            } else {
                r.issue("\(path).mapping_policy",
                        "unknown mapping policy (expected one of: \(MappingPolicy.allCases.map(\.rawValue).joined(separator: ", ")))",
                        form["mapping_policy"])
            }
        }
        let brands = readBrands(form["card_brands"], at: "\(path).card_brands", r)
        guard let items = r.sequence(form["fields"], at: "\(path).fields") else {
            r.issue("\(path).fields", "a form needs a list of fields", node)
            return nil
        }
        var fields: [FieldSchema] = []
        var names = Set<String>()
        for (i, item) in items.enumerated() {
            let p = "\(path).fields[\(i)]"
            guard let field = FieldSchema.read(item, at: p, r) else { continue }
            for output in [field.name] + (field.serializer?.fieldNames ?? []) {
                if !names.insert(output).inserted { r.issue("\(p).name", "duplicate field name \"\(output)\"", item) }
                if FieldNameSubscript.parse(output).isEmpty {
                    r.issue("\(p).name", "\"\(output)\" has no name between its dots", item)
                }
                for index in FieldNameSubscript.oversizedIndices(in: output) {
                    r.issue("\(p).name", "array index [\(index)] in \"\(output)\" is over \(FieldNameSubscript.maxIndex)", item)
                }
            }
            fields.append(field)
        }
        for (i, field) in fields.enumerated() {
            guard let card = field.cardField else { continue }
            if !fields.contains(where: { $0.name == card && $0.type == .cardNumber }) {
                r.issue("\(path).fields[\(i)].card_field", "names no cardNumber field of this form")
            }
        }
        return FormSchema(name: name, fields: fields, brands: brands, mappingPolicy: policy)
    }

    private static func readBrands(_ node: ConfigNode?, at path: String, _ r: ConfigReader) -> CardBrandTable {
        guard let m = r.mapping(node, at: path, allowed: ["custom", "accepted"]) else { return .standard }
        var custom: [PaymentCardModel] = []
        for (i, item) in (r.sequence(m["custom"], at: "\(path).custom") ?? []).enumerated() {
            let p = "\(path).custom[\(i)]"
            guard let b = r.mapping(item, at: p, allowed: ["name", "regex", "lengths", "cvc_lengths", "luhn", "format_pattern"])
            else { continue }
            guard let name = r.string(b["name"], at: "\(p).name"), !name.isEmpty else {
                r.issue("\(p).name", "is required", item)
                continue
            }
            if CardBrandTable.builtInBrands.contains(where: { $0.id == name }) || name == "unknown" {
                r.issue("\(p).name", "clashes with a built-in brand", item)
            }
            guard let source = r.string(b["regex"], at: "\(p).regex") else {
                r.issue("\(p).regex", "is required", item)
                continue
            }
            let regex: RegexPattern
            do {
                regex = try RegexPattern(source)
            } catch {
                r.issue("\(p).regex", error.description, b["regex"])
                continue
            }
            // Card numbers are at most 19 digits (ISO/IEC 7812), CVCs at most 4; a little room on
            // both, and no more (the fuzzer found `cvc_lengths: [9999999999]` allocating gigabytes).
            let lengths = r.ints(b["lengths"], at: "\(p).lengths", min: 1, max: 32) ?? [16]
            let cvc = b["cvc_lengths"].flatMap { r.ints($0, at: "\(p).cvc_lengths", min: 1, max: 8) } ?? [3]
            let luhn = b["luhn"].flatMap { r.bool($0, at: "\(p).luhn") } ?? true
            let pattern = r.string(b["format_pattern"], at: "\(p).format_pattern") ?? "#### #### #### #### ###"
            custom.append(PaymentCardModel(
                brand: .custom(name), name: name, matcher: BrandMatcher(regex: regex), cardNumberLengths: lengths,
                cvcLengths: cvc, luhn: luhn, formatPattern: pattern))
        }
        var accepted: [CardBrand]?
        if let names = r.strings(m["accepted"], at: "\(path).accepted") {
            accepted = []
            for (i, name) in names.enumerated() {
                if let model = (custom + PaymentCardModel.builtIn).first(where: { $0.brand.id == name }) {
                    accepted?.append(model.brand)
                } else {
                    r.issue("\(path).accepted[\(i)]", "unknown card brand \"\(name)\"")
                }
            }
        }
        return CardBrandTable(custom: custom, accepted: accepted)
    }
}

extension FieldSchema {
    static let keys: Set<String> = [
        "name", "type", "required", "required_valid_only", "format_pattern", "divider", "validation", "mask",
        "transform", "input_date_format", "output_date_format", "serializers", "card_field", "tokenization",
    ]

    /// Reads one `fields[]` entry (SPEC §2).
    static func read(_ node: ConfigNode, at p: String, _ r: ConfigReader) -> FieldSchema? {
        guard let m = r.mapping(node, at: p, allowed: keys) else { return nil }
        guard let name = r.string(m["name"], at: "\(p).name"), !name.isEmpty else {
            r.issue("\(p).name", "is required", node)
            return nil
        }
        var type = FieldType.none
        if let t = r.string(m["type"], at: "\(p).type") {
            if let parsed = FieldType(rawValue: t) {
                type = parsed
            } else {
                r.issue("\(p).type", "unknown field type (expected one of: \(FieldType.allCases.map(\.rawValue).joined(separator: ", ")))", m["type"])
            }
        }
        var field = FieldSchema(name: name, type: type)
        field.isRequired = m["required"].flatMap { r.bool($0, at: "\(p).required") } ?? false
        field.isRequiredValidOnly = m["required_valid_only"].flatMap { r.bool($0, at: "\(p).required_valid_only") } ?? false
        field.formatPattern = r.string(m["format_pattern"], at: "\(p).format_pattern").map(FormatPattern.init)
        field.divider = r.string(m["divider"], at: "\(p).divider")
        if let rules = m["validation"] {
            field.rules = readRules(rules, at: "\(p).validation", type: type, r)
        }
        if let mask = m["mask"] {
            field.mask = readMask(mask, at: "\(p).mask", r)
            if m["format_pattern"] != nil { r.issue("\(p).mask", "a field has a mask or a format_pattern, not both", mask) }
        }
        if let t = r.mapping(m["transform"], at: "\(p).transform", allowed: ["matcher", "replacement"]) {
            if let source = r.string(t["matcher"], at: "\(p).transform.matcher") {
                do {
                    field.transform = InputTransform(
                        matcher: try RegexPattern(source),
                        replacement: r.string(t["replacement"], at: "\(p).transform.replacement") ?? "")
                } catch {
                    r.issue("\(p).transform.matcher", error.description, t["matcher"])
                }
            } else {
                r.issue("\(p).transform.matcher", "is required", m["transform"])
            }
        }
        for key in ["input_date_format", "output_date_format"] {
            guard let text = r.string(m[key], at: "\(p).\(key)") else { continue }
            guard type == .expDate || type == .date else {
                r.issue("\(p).\(key)", "date formats apply to expDate and date fields only", m[key])
                continue
            }
            guard let format = DateFormatKind(name: text, for: type) else {
                let names = type == .expDate ? ExpDateFormat.allCases.map(\.rawValue) : DateFormat.allCases.map(\.rawValue)
                r.issue("\(p).\(key)", "unknown \(type.rawValue) format (expected one of: \(names.joined(separator: ", ")))", m[key])
                continue
            }
            if key == "input_date_format" { field.inputDateFormat = format } else { field.outputDateFormat = format }
        }
        if (field.inputDateFormat == nil) != (field.outputDateFormat == nil) {
            r.issue(p, "input_date_format and output_date_format convert only together; set both or neither", node)
        }
        if let s = m["serializers"] {
            field.serializer = readSerializer(s, at: "\(p).serializers", type: type, r)
        }
        if let card = r.string(m["card_field"], at: "\(p).card_field") {
            if type == .cvc { field.cardField = card } else { r.issue("\(p).card_field", "applies to cvc fields only", m["card_field"]) }
        }
        if let t = r.mapping(m["tokenization"], at: "\(p).tokenization", allowed: ["format", "storage", "luhn"]) {
            var settings = TokenizationSettings.defaults(for: type)
            if let f = r.string(t["format"], at: "\(p).tokenization.format") {
                if let format = AliasFormatName(rawValue: f) { settings.format = format } else {
                    r.issue("\(p).tokenization.format", "unknown alias format", t["format"])
                }
            }
            if let s = r.string(t["storage"], at: "\(p).tokenization.storage") {
                if let storage = TokenizationSettings.Storage(rawValue: s) { settings.storage = storage } else {
                    r.issue("\(p).tokenization.storage", "expected PERSISTENT or VOLATILE", t["storage"])
                }
            }
            if let l = r.string(t["luhn"], at: "\(p).tokenization.luhn") {
                switch l {
                case "valid": settings.luhnValid = true
                case "invalid": settings.luhnValid = false
                default: r.issue("\(p).tokenization.luhn", "expected valid or invalid", t["luhn"])
                }
            }
            field.tokenization = settings
        }
        return field
    }

    private static func readMask(_ node: ConfigNode, at p: String, _ r: ConfigReader) -> InputMask? {
        guard let items = r.sequence(node, at: p) else { return nil }
        var positions: [InputMask.Position] = []
        for (i, item) in items.enumerated() {
            switch item {
            case let .scalar(text, _):
                guard text.count == 1, let c = text.first else {
                    r.issue("\(p)[\(i)]", "a literal mask position is exactly one character", item)
                    continue
                }
                positions.append(.literal(c))
            default:
                guard let m = r.mapping(item, at: "\(p)[\(i)]", allowed: ["regex"]),
                    let source = r.string(m["regex"], at: "\(p)[\(i)].regex")
                else {
                    r.issue("\(p)[\(i)]", "expected a one-character literal or {regex: …}", item)
                    continue
                }
                do { positions.append(.pattern(try RegexPattern(source))) } catch {
                    r.issue("\(p)[\(i)].regex", error.description, item)
                }
            }
        }
        if positions.isEmpty { r.issue(p, "a mask needs at least one position", node) }
        return InputMask(positions)
    }

    private static func readSerializer(_ node: ConfigNode, at p: String, type: FieldType, _ r: ConfigReader)
        -> FieldSerializer?
    {
        guard let items = r.sequence(node, at: p) else { return nil }
        let allowed: [String]
        switch type {
        case .expDate: allowed = ["month", "year"]
        case .date: allowed = ["day", "month", "year"]
        default:
            r.issue(p, "serializers apply to expDate (month, year) and date (day, month, year) fields only", node)
            return nil
        }
        var names: [String: String] = [:]
        for (i, item) in items.enumerated() {
            guard let m = r.mapping(item, at: "\(p)[\(i)]", allowed: Set(allowed)) else { continue }
            for (component, value) in m {
                if let name = r.string(value, at: "\(p)[\(i)].\(component)") {
                    if names.updateValue(name, forKey: component) != nil {
                        r.issue("\(p)[\(i)].\(component)", "component given twice", item)
                    }
                }
            }
        }
        let missing = allowed.filter { names[$0] == nil }
        guard missing.isEmpty else {
            r.issue(p, "a \(type.rawValue) serializer needs \(allowed.joined(separator: ", ")); missing \(missing.joined(separator: ", "))", node)
            return nil
        }
        return type == .expDate
            ? .expDate(monthField: names["month"]!, yearField: names["year"]!)
            : .date(dayField: names["day"]!, monthField: names["month"]!, yearField: names["year"]!)
    }

    private static let ruleNames = [
        "pattern", "length", "length_match", "luhn", "payment_card", "exp_date", "date_range", "aba_routing",
    ]

    /// Reads `validation:`; each entry is a rule name or `{rule: parameters, error: STRING}`.
    static func readRules(_ node: ConfigNode, at p: String, type: FieldType, _ r: ConfigReader) -> [any ValidationRule] {
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
                    r.issue(ip, "each entry names exactly one rule (one of: \(ruleNames.joined(separator: ", ")))", item)
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
            let unknown = m["validate_unknown_brand"].flatMap { r.bool($0, at: "\(p).payment_card.validate_unknown_brand") }
            return PaymentCardRule(validateUnknownCardBrand: unknown ?? false, error: error ?? ValidationErrorString.cardNumber)
        case "exp_date":
            let m = r.mapping(params, at: "\(p).exp_date", allowed: ["format"]) ?? [:]
            var format = ExpDateFormat.shortYear
            if let f = r.string(m["format"], at: "\(p).exp_date.format") {
                if let parsed = ExpDateFormat(rawValue: f) { format = parsed } else {
                    r.issue("\(p).exp_date.format", "unknown expiry format (expected one of: \(ExpDateFormat.allCases.map(\.rawValue).joined(separator: ", ")))", m["format"])
                }
            }
            return CardExpirationDateRule(format: format, error: error ?? ValidationErrorString.expDate)
        case "date_range":
            let m = r.mapping(params, at: "\(p).date_range", allowed: ["format", "start", "end"]) ?? [:]
            var format = DateFormat.mmddyyyy
            if let f = r.string(m["format"], at: "\(p).date_range.format") {
                if let parsed = DateFormat(rawValue: f) { format = parsed } else {
                    r.issue("\(p).date_range.format", "unknown date format (expected one of: \(DateFormat.allCases.map(\.rawValue).joined(separator: ", ")))", m["format"])
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
            return DateRangeRule(format: format, start: bounds[0], end: bounds[1], error: error ?? ValidationErrorString.date)
        default:
            r.issue(p, "unknown validation rule \"\(name)\" (expected one of: \(ruleNames.joined(separator: ", ")))")
            return nil
        }
    }
}
