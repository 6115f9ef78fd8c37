import CloakCore

extension FormSchema {
    /// Reads `forms.<name>`:
    /// - `mapping_policy`: flatJSON | nestedJSON (default) | nestedJSONWithArrayMerge | nestedJSONWithArrayOverwrite
    /// - `card_brands.custom[]`: `name`, `regex`, `lengths`, `cvc_lengths` ([3]), `luhn` (true), `format_pattern`
    /// - `card_brands.accepted[]`: brand ids (`visa`, `amex`, …, or a custom name); replaces the detection list
    /// - `fields[]`: see ``FieldSchema/read(_:at:brands:_:)``
    static func read(name: String, _ node: ConfigNode, at path: String, _ r: ConfigReader) -> FormSchema? {
        guard let form = r.mapping(node, at: path, allowed: ["mapping_policy", "fields", "card_brands"]) else {
            return nil
        }
        var policy = MappingPolicy.nestedJSON
        if let text = r.string(form["mapping_policy"], at: "\(path).mapping_policy") {
            if let p = MappingPolicy(rawValue: text) {
                policy = p
            } else {
                r.issue(
                    "\(path).mapping_policy",
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
                    r.issue(
                        "\(p).name", "array index [\(index)] in \"\(output)\" is over \(FieldNameSubscript.maxIndex)",
                        item)
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
            guard
                let b = r.mapping(
                    item, at: p, allowed: ["name", "regex", "lengths", "cvc_lengths", "luhn", "format_pattern"])
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
            custom.append(
                PaymentCardModel(
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
