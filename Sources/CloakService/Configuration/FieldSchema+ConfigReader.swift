import CloakCore

extension FieldSchema {
    static let keys: Set<String> = [
        "name", "type", "required", "required_valid_only", "format_pattern", "divider", "validation", "mask",
        "transform", "input_date_format", "output_date_format", "serializers", "card_field", "tokenization",
        "max_bytes", "types", "max_files", "ttl_s", "accept",
    ]

    /// The keys of a `file` field: the rest shape text.
    static let fileKeys: Set<String> = ["name", "type", "required", "max_bytes", "types", "max_files", "ttl_s"]

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
                r.issue(
                    "\(p).type",
                    "unknown field type (expected one of: \(FieldType.allCases.map(\.rawValue).joined(separator: ", ")))",
                    m["type"])
            }
        }
        var field = FieldSchema(name: name, type: type)
        field.isRequired = m["required"].flatMap { r.bool($0, at: "\(p).required") } ?? false
        if type == .file {
            for key in m.keys.sorted() where !fileKeys.contains(key) {
                r.issue(
                    "\(p).\(key)",
                    "does not apply to a file field (it takes \(fileKeys.sorted().joined(separator: ", ")))", m[key])
            }
            field.fileRules = readFileRules(m, at: p, isRequired: field.isRequired, r)
            field.retentionSeconds = r.int(m["ttl_s"], at: "\(p).ttl_s", min: 60, max: 10 * 365 * 86_400)
            return field
        }
        for key in ["max_bytes", "types", "max_files", "ttl_s"] where m[key] != nil {
            r.issue("\(p).\(key)", "applies to file fields only", m[key])
        }
        field.isRequiredValidOnly =
            m["required_valid_only"].flatMap { r.bool($0, at: "\(p).required_valid_only") } ?? false
        field.formatPattern = r.string(m["format_pattern"], at: "\(p).format_pattern").map(FormatPattern.init)
        field.divider = r.string(m["divider"], at: "\(p).divider")
        if let rules = m["validation"] {
            field.rules = readRules(rules, at: "\(p).validation", type: type, r)
        }
        if let mask = m["mask"] {
            field.mask = readMask(mask, at: "\(p).mask", r)
            if m["format_pattern"] != nil {
                r.issue("\(p).mask", "a field has a mask or a format_pattern, not both", mask)
            }
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
                let names =
                    type == .expDate ? ExpDateFormat.allCases.map(\.rawValue) : DateFormat.allCases.map(\.rawValue)
                r.issue(
                    "\(p).\(key)",
                    "unknown \(type.rawValue) format (expected one of: \(names.joined(separator: ", ")))", m[key])
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
            if type == .cvc {
                field.cardField = card
            } else {
                r.issue("\(p).card_field", "applies to cvc fields only", m["card_field"])
            }
        }
        if let accept = r.mapping(m["accept"], at: "\(p).accept", allowed: ["funding", "countries", "error"]) {
            if type == .cardNumber {
                field.accept = readAccept(accept, at: "\(p).accept", r)
            } else {
                r.issue("\(p).accept", "applies to cardNumber fields only", m["accept"])
            }
        }
        if let t = r.mapping(m["tokenization"], at: "\(p).tokenization", allowed: ["format", "storage", "luhn"]) {
            var settings = TokenizationSettings.defaults(for: type)
            if let format = r.aliasFormat(t["format"], at: "\(p).tokenization.format") { settings.format = format }
            if let s = r.string(t["storage"], at: "\(p).tokenization.storage") {
                if let storage = TokenizationSettings.Storage(rawValue: s) {
                    settings.storage = storage
                } else {
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

    /// `accept: {funding: [credit, debit], countries: [US, CA], error: CARD_NOT_ACCEPTED}`.
    private static func readAccept(_ m: [String: ConfigNode], at p: String, _ r: ConfigReader) -> CardAcceptRule {
        var rule = CardAcceptRule()
        if let names = r.strings(m["funding"], at: "\(p).funding") {
            var funding = Set<CardAttributes.Funding>()
            for (i, name) in names.enumerated() {
                if let f = CardAttributes.Funding(rawValue: name) {
                    funding.insert(f)
                } else {
                    r.issue(
                        "\(p).funding[\(i)]",
                        "expected one of \(CardAttributes.Funding.allCases.map(\.rawValue).joined(separator: ", "))",
                        m["funding"])
                }
            }
            rule.funding = funding
        }
        if let codes = r.strings(m["countries"], at: "\(p).countries") {
            for (i, code) in codes.enumerated() where !CardAcceptRule.isCountry(code) {
                r.issue("\(p).countries[\(i)]", "is not an ISO 3166-1 alpha-2 code (or XK)", m["countries"])
            }
            rule.countries = Set(codes)
        }
        if let error = r.string(m["error"], at: "\(p).error") {
            if error.isEmpty { r.issue("\(p).error", "is an error string, not empty", m["error"]) }
            rule.error = error
        }
        if rule.funding == nil && rule.countries == nil { r.issue(p, "accepts by funding, countries or both", nil) }
        return rule
    }

    /// `max_bytes` (default 10 MiB, at most 64 MiB), `types` (media types; default all),
    /// `max_files` (default 1, at most 20).
    private static func readFileRules(_ m: [String: ConfigNode], at p: String, isRequired: Bool, _ r: ConfigReader)
        -> FileRules
    {
        var rules = FileRules(isRequired: isRequired)
        if let most = r.int(m["max_bytes"], at: "\(p).max_bytes", min: 1, max: FileRules.largestMaxBytes) {
            rules.maxBytes = most
        }
        if let count = r.int(m["max_files"], at: "\(p).max_files", min: 1, max: FileRules.largestMaxFiles) {
            rules.maxFiles = count
        }
        if let names = r.strings(m["types"], at: "\(p).types") {
            var types: [FileMediaType] = []
            for (i, name) in names.enumerated() {
                guard let type = FileMediaType(rawValue: name) else {
                    r.issue(
                        "\(p).types[\(i)]",
                        "unknown media type (expected: \(FileMediaType.allCases.map(\.rawValue).joined(separator: ", ")))",
                        m["types"])
                    continue
                }
                if !types.contains(type) { types.append(type) }
            }
            if names.isEmpty { r.issue("\(p).types", "a file field allows at least one type", m["types"]) }
            rules.types = types
        }
        return rules
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
            r.issue(
                p,
                "a \(type.rawValue) serializer needs \(allowed.joined(separator: ", ")); missing \(missing.joined(separator: ", "))",
                node)
            return nil
        }
        return type == .expDate
            ? .expDate(monthField: names["month"]!, yearField: names["year"]!)
            : .date(dayField: names["day"]!, monthField: names["month"]!, yearField: names["year"]!)
    }
}
