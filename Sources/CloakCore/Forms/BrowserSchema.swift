/// A form's schema read back from what Cloak serves at `GET /elements/v1/forms/{form}`
/// (``FormSchema/browserSchema(today:)``): the same fields, brands and rules, so a client that
/// runs ``FormValidation`` on it computes exactly the field states the server computes. The
/// native client (`CloakCollect`) builds its fields from it and never asks the server per
/// keystroke.
///
/// What the schema leaves out changes no field state: date conversions, serializers and
/// tokenization shape only what a submission sends, and the server applies them itself.
public struct BrowserSchema: Sendable {
    public let form: FormSchema
    /// The server's date when it served the schema: expiry windows are judged against it.
    public let today: CalendarDate
    /// How each field presents itself, by name: what a view sets its accessibility label, its
    /// keyboard and its autofill hint from.
    public let presentation: [String: FieldPresentation]

    public struct FieldPresentation: Sendable, Equatable {
        /// What a screen reader announces ("Card number").
        public let title: String
        /// The HTML `autocomplete` token (`cc-number`, `cc-exp`, `cc-csc`, `cc-name`, `off`).
        public let autocomplete: String
        /// Digits only: a numeric keyboard.
        public let isNumeric: Bool

        public init(title: String, autocomplete: String, isNumeric: Bool) {
            self.title = title
            self.autocomplete = autocomplete
            self.isNumeric = isNumeric
        }
    }

    /// Reads a served schema.
    /// - Throws: 1002 naming the member that is missing or not what Cloak serves (never a value:
    ///   a schema holds none).
    public init(_ document: JSONValue) throws(CloakError) {
        let r = SchemaReader()
        guard case .object = document else { throw .malformed("the schema is not a JSON object") }
        let name = try r.string(document["form"], "form")
        today = try r.date(document["today"], "today")
        let brandList = try r.array(document["brands"], "brands")
        var custom: [PaymentCardModel] = []
        var order: [CardBrand] = []
        for (i, item) in brandList.enumerated() {
            let model = try r.brand(item, "brands[\(i)]")
            if model.brand.isCustom { custom.append(model) }
            order.append(model.brand)
        }
        let brands = CardBrandTable(custom: custom, accepted: order)
        var fields: [FieldSchema] = []
        var presentation: [String: FieldPresentation] = [:]
        for (i, item) in try r.array(document["fields"], "fields").enumerated() {
            let at = "fields[\(i)]"
            let field = try r.field(item, at)
            guard presentation[field.name] == nil else { throw .malformed("\(at).name: a name twice") }
            fields.append(field)
            presentation[field.name] = FieldPresentation(
                title: try r.string(item["title"], "\(at).title"),
                autocomplete: try r.string(item["autocomplete"], "\(at).autocomplete"),
                isNumeric: try r.string(item["inputmode"], "\(at).inputmode") == "numeric")
        }
        form = FormSchema(name: name, fields: fields, brands: brands)
        self.presentation = presentation
    }
}

/// The schema's members, each read or refused by its path.
private struct SchemaReader {
    func string(_ v: JSONValue?, _ at: String) throws(CloakError) -> String {
        guard case let .string(s)? = v else { throw .malformed("\(at) must be a string") }
        return s
    }

    func bool(_ v: JSONValue?, _ at: String) throws(CloakError) -> Bool {
        guard case let .bool(b)? = v else { throw .malformed("\(at) must be true or false") }
        return b
    }

    func int(_ v: JSONValue?, _ at: String) throws(CloakError) -> Int {
        guard case let .number(text)? = v, let n = Int(text) else { throw .malformed("\(at) must be a whole number") }
        return n
    }

    func array(_ v: JSONValue?, _ at: String) throws(CloakError) -> [JSONValue] {
        guard case let .array(items)? = v else { throw .malformed("\(at) must be an array") }
        return items
    }

    func ints(_ v: JSONValue?, _ at: String) throws(CloakError) -> [Int] {
        var out: [Int] = []
        for (i, item) in try array(v, at).enumerated() { out.append(try int(item, "\(at)[\(i)]")) }
        return out
    }

    func regex(_ v: JSONValue?, _ at: String) throws(CloakError) -> RegexPattern {
        let source = try string(v, at)
        do { return try RegexPattern(source) } catch { throw .malformed("\(at) is not a regular expression") }
    }

    func date(_ v: JSONValue?, _ at: String) throws(CloakError) -> CalendarDate {
        guard
            let date = CalendarDate(
                year: try int(v?["year"], "\(at).year"), month: try int(v?["month"], "\(at).month"),
                day: try int(v?["day"], "\(at).day"))
        else { throw .malformed("\(at) is not a calendar date") }
        return date
    }

    func optionalDate(_ v: JSONValue?, _ at: String) throws(CloakError) -> CalendarDate? {
        if v == nil || v == .null { return nil }
        return try date(v, at)
    }

    /// A brand: the built-in model itself when the schema names a built-in brand with its own
    /// regex (its prefix table detects faster), else a custom one.
    func brand(_ v: JSONValue, _ at: String) throws(CloakError) -> PaymentCardModel {
        let id = try string(v["id"], "\(at).id")
        let regex = try regex(v["regex"], "\(at).regex")
        if let builtIn = PaymentCardModel.builtIn.first(where: { $0.brand.id == id }),
            builtIn.matcher.regex.source == regex.source
        {
            return builtIn
        }
        // Bounded as the configuration bounds them: a hostile document must not make a client
        // build a huge pattern or cut a number at a negative length.
        let lengths = try ints(v["lengths"], "\(at).lengths")
        let cvcLengths = try ints(v["cvcLengths"], "\(at).cvcLengths")
        guard !lengths.isEmpty, lengths.allSatisfy({ (1...19).contains($0) }) else {
            throw .malformed("\(at).lengths must be 1 to 19 digits")
        }
        guard !cvcLengths.isEmpty, cvcLengths.allSatisfy({ (1...8).contains($0) }) else {
            throw .malformed("\(at).cvcLengths must be 1 to 8 digits")
        }
        let pattern = try string(v["pattern"], "\(at).pattern")
        guard pattern.count <= 64 else { throw .malformed("\(at).pattern is longer than 64 characters") }
        return PaymentCardModel(
            brand: .custom(id), name: try string(v["name"], "\(at).name"), matcher: BrandMatcher(regex: regex),
            cardNumberLengths: lengths, cvcLengths: cvcLengths, luhn: try bool(v["luhn"], "\(at).luhn"),
            formatPattern: pattern)
    }

    func field(_ v: JSONValue, _ at: String) throws(CloakError) -> FieldSchema {
        let typeName = try string(v["type"], "\(at).type")
        guard let type = FieldType(rawValue: typeName) else { throw .malformed("\(at).type is not a field type") }
        var field = FieldSchema(name: try string(v["name"], "\(at).name"), type: type)
        field.isRequired = try bool(v["required"], "\(at).required")
        field.isRequiredValidOnly = try bool(v["requiredValidOnly"], "\(at).requiredValidOnly")
        field.divider = try string(v["divider"], "\(at).divider")
        if case let .string(pattern)? = v["pattern"] { field.formatPattern = FormatPattern(pattern) }
        if case let .string(card)? = v["cardField"] { field.cardField = card }
        if let rules = v["rules"], rules != .null {
            var out: [any ValidationRule] = []
            for (i, rule) in try array(rules, "\(at).rules").enumerated() {
                out.append(try self.rule(rule, "\(at).rules[\(i)]"))
            }
            field.rules = out
        }
        if let mask = v["mask"], mask != .null {
            var positions: [InputMask.Position] = []
            for (i, p) in try array(mask, "\(at).mask").enumerated() {
                if case let .string(literal)? = p["literal"], literal.count == 1 {
                    positions.append(.literal(literal.first!))
                } else {
                    positions.append(.pattern(try regex(p["regex"], "\(at).mask[\(i)].regex")))
                }
            }
            field.mask = InputMask(positions)
        }
        if let file = v["file"], file != .null {
            guard type == .file else { throw .malformed("\(at).file: rules of a file field on a \(typeName) field") }
            var types: [FileMediaType] = []
            for (i, t) in try array(file["types"], "\(at).file.types").enumerated() {
                guard let media = FileMediaType(rawValue: try string(t, "\(at).file.types[\(i)]")) else {
                    throw .malformed("\(at).file.types[\(i)] is not a media type this client knows")
                }
                types.append(media)
            }
            field.fileRules = FileRules(
                maxBytes: try int(file["maxBytes"], "\(at).file.maxBytes"), types: types,
                maxFiles: try int(file["maxFiles"], "\(at).file.maxFiles"),
                isRequired: try bool(file["required"], "\(at).file.required"))
        } else if type == .file {
            throw .malformed("\(at).file: a file field without its rules")
        }
        if let accept = v["accept"], accept != .null {
            guard type == .cardNumber, let rule = CardAcceptRule(json: accept) else {
                throw .malformed("\(at).accept: not a card number's accept rule")
            }
            field.accept = rule
        }
        if let transform = v["transform"], transform != .null {
            field.transform = InputTransform(
                matcher: try regex(transform["matcher"], "\(at).transform.matcher"),
                replacement: try string(transform["replacement"], "\(at).transform.replacement"))
        }
        return field
    }

    func rule(_ v: JSONValue, _ at: String) throws(CloakError) -> any ValidationRule {
        let kind = try string(v["kind"], "\(at).kind")
        if kind == "server" { throw .malformed("\(at): a rule this client cannot run (kind server)") }
        let error = try string(v["error"], "\(at).error")
        switch kind {
        case "pattern": return PatternRule(pattern: try regex(v["regex"], "\(at).regex"), error: error)
        case "length":
            let max = v["max"] == .null ? Int.max : try int(v["max"], "\(at).max")
            return LengthRule(min: try int(v["min"], "\(at).min"), max: max, error: error)
        case "lengthMatch": return LengthMatchRule(lengths: try ints(v["lengths"], "\(at).lengths"), error: error)
        case "luhn": return LuhnRule(error: error)
        case "aba": return ABARoutingNumberRule(error: error)
        case "paymentCard":
            return PaymentCardRule(
                validateUnknownCardBrand: try bool(v["validateUnknownBrand"], "\(at).validateUnknownBrand"),
                error: error)
        case "expDate":
            guard let format = ExpDateFormat(rawValue: try string(v["format"], "\(at).format")) else {
                throw .malformed("\(at).format is not an expiry format")
            }
            return CardExpirationDateRule(format: format, error: error)
        case "dateRange":
            guard let format = DateFormat(rawValue: try string(v["format"], "\(at).format")) else {
                throw .malformed("\(at).format is not a date format")
            }
            return DateRangeRule(
                format: format, start: try optionalDate(v["start"], "\(at).start"),
                end: try optionalDate(v["end"], "\(at).end"), error: error)
        default:
            throw .malformed("\(at).kind is not a rule this client knows")
        }
    }
}
