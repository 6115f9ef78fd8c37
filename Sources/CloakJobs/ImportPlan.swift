import CloakCore
import CloakVault

/// How an import's rows become alias requests (issue 60): the columns it reads, which it must
/// have and which it refuses, and each row checked with the form's (or the format's) rules,
/// exactly as the form endpoints and `POST /aliases` check a submission. Pure: made once per
/// job (``init(_:forms:)`` refuses a job that could import nothing right), then asked
/// row by row on the runner's thread.
package struct ImportPlan: Sendable {
    let spec: ImportSpec
    /// Every column read, and those a file must have.
    let reads: [String]
    let required: [String]
    /// Columns refused whatever the map (a security code: never stored, PCI DSS 3.2.2).
    let forbidden: [String: String]
    let mapping: [String: String]
    private let form: FormSchema?
    /// A form's expiry fields, each with the format it takes and the columns that may hold its
    /// month and year apart (``ExpiryLayouts``).
    private let expiries: [Expiry]

    package struct Expiry: Sendable {
        let field: String
        let format: ExpDateFormat
        /// Column pairs (month, year), the field's own first.
        let parts: [(month: String, year: String)]
    }

    /// The row's own id: echoed in the mapping and advice files, and stored as a value of the
    /// row's group (issue 76).
    static let idColumn = "id"
    static let securityCode = "a card's security code is never imported (it may not be stored)"

    package init(_ spec: ImportSpec, forms: [String: FormSchema]) throws(CloakError) {
        self.spec = spec
        var forbidden: [String: String] = [:]
        switch spec.source {
        case let .form(name):
            guard let form = forms[name] else { throw Self.refusal("no form \(name)") }
            guard !form.hasFileFields else {
                throw Self.refusal("form \(name) takes files: an import reads text columns")
            }
            var reads = [Self.idColumn]
            var required = [Self.idColumn]
            var expiries: [Expiry] = []
            let expiryFields = form.fields.filter { $0.type == .expDate }
            let names = Set(form.fields.map(\.name))
            for field in form.fields {
                if field.type == .cvc || field.tokenization?.storage == .volatile
                    || SecurityCodeName.matches(field.name)
                {
                    guard !field.isRequired else {
                        throw Self.refusal(
                            "form \(name) requires \(field.name), a value that is only ever kept VOLATILE: "
                                + "an import stores PERSISTENT values only")
                    }
                    forbidden[field.name.lowercased()] = "a VOLATILE value (\(field.name)) is never imported"
                    continue
                }
                reads.append(field.name)
                if field.type == .expDate {
                    // The expiry may come as one column or as a month and a year: a missing
                    // one is the row's refusal (the form's `required`), not the file's.
                    var parts = [(month: "\(field.name)_month", year: "\(field.name)_year")]
                    if expiryFields.count == 1, !names.contains("exp_month"), !names.contains("exp_year") {
                        parts.append((month: "exp_month", year: "exp_year"))
                    }
                    for pair in parts { reads += [pair.month, pair.year] }
                    var format = ExpDateFormat.shortYear
                    if case let .expDate(given)? = field.inputDateFormat { format = given }
                    expiries.append(Expiry(field: field.name, format: format, parts: parts))
                    continue
                }
                if field.isRequired { required.append(field.name) }
            }
            self.expiries = expiries
            guard form.fields.contains(where: { $0.tokenization != nil && $0.tokenization?.storage != .volatile })
            else { throw Self.refusal("form \(name) aliases no field: an import would store nothing") }
            self.form = form
            self.reads = reads
            self.required = required
        case .format:
            form = nil
            expiries = []
            reads = [Self.idColumn, "value"]
            required = reads
        }
        self.forbidden = forbidden
        let reads = self.reads
        if let map = spec.map {
            do { mapping = try ColumnMap.mapping(map, reads: reads) } catch { throw Self.refusal("\(error)") }
        } else {
            mapping = [:]
        }
        if let both = Set(spec.ignored).intersection(Set(mapping.keys).union(reads)).sorted().first {
            throw Self.refusal("ignore_columns names \(both), which is read (a column, or mapped)")
        }
    }

    /// The columns of a file whose header (or first object's keys) is `header`.
    func columns(_ header: [String]) throws(ColumnMap.Problem) -> ColumnMap {
        // A column named like a card's security code, as written or as mapped (``SecurityCodeName``).
        for raw in header {
            let source = raw.trimmingSpaces()
            if SecurityCodeName.matches(source) || SecurityCodeName.matches(mapping[source] ?? source) {
                throw .forbidden(source, reason: Self.securityCode)
            }
        }
        let map = try ColumnMap(
            header: header, reads: reads, required: required, mapping: mapping, ignored: Set(spec.ignored),
            forbidden: forbidden)
        // A required expiry: its own column, or a month and a year in columns of their own.
        let present = Set(map.columns.map(\.name))
        for expiry in expiries where form?.fields.first(where: { $0.name == expiry.field })?.isRequired == true {
            guard
                present.contains(expiry.field)
                    || expiry.parts.contains(where: { present.contains($0.month) && present.contains($0.year) })
            else { throw .missing(expiry.field) }
        }
        return map
    }

    /// A row's values (by column) as the vault's requests, or why the row is refused.
    func row(_ values: [String: String], line: Int, today: CalendarDate) -> ImportRow {
        let id = values[Self.idColumn]
        guard let id, !id.isEmpty else {
            return ImportRow(line: line, id: nil, outcome: .failure(Self.refused(.malformed("the row has no id"))))
        }
        guard id.utf8.count <= ImportLines.maxIDBytes else {
            return ImportRow(
                line: line, id: nil,
                outcome: .failure(Self.refused(.malformed("an id longer than \(ImportLines.maxIDBytes) bytes"))))
        }
        // The id is echoed in both outputs: one that holds a card number (a column mapped the
        // wrong way round) is refused, never echoed.
        guard CardScan.cards(in: id).isEmpty else {
            return ImportRow(
                line: line, id: nil,
                outcome: .failure(
                    Self.refused(.malformed("the id holds a card number (is a column mapped the wrong way?)"))))
        }
        return ImportRow(line: line, id: id, outcome: requests(values, today: today))
    }

    private func requests(_ values: [String: String], today: CalendarDate) -> Result<[ImportValue], ImportRefusal> {
        let found: [ImportValue]
        switch spec.source {
        case let .format(format):
            let value = values["value"] ?? ""
            guard !value.isEmpty else { return .failure(Self.refused(.malformed("the row has no value"))) }
            found = [
                Self.rowID(values[Self.idColumn] ?? ""),
                ImportValue(key: "value", request: AliasRequest(value: value, format: format, storage: .persistent)),
            ]
        case .form:
            guard let form else { return .failure(Self.refused(.malformed("no form"))) }
            let values = expiriesRead(values)
            let validation = FormValidation(
                form: form, values: form.fields.map { values[$0.name] }, context: ValidationContext(today: today))
            if let error = validation.inputError {
                // The fields and the rules they broke (the SDK's words), never their values.
                let missing = Set(validation.requiredMissing)
                let broken = validation.fields.compactMap { field -> String? in
                    let name = field.schema.name
                    if missing.contains(name) { return "\(name): missing" }
                    guard validation.requiredInvalid.contains(name) else { return nil }
                    return "\(name): \(field.validationErrors.joined(separator: ", "))"
                }
                return .failure(
                    ImportRefusal(
                        code: error.code.rawValue, reason: "\(error.message): \(broken.joined(separator: "; "))"))
            }
            let submission = FormSubmission(validation, keepSensitiveRaw: false)
            let aliased = submission.requests.indices.map {
                ImportValue(key: submission.key(ofRequest: $0), request: submission.requests[$0])
            }
            guard !aliased.isEmpty else {
                return .failure(Self.refused(.malformed("the row has no value to alias")))
            }
            // The rest of the row goes into its group as values of their own (an expiry as the
            // form reads it, a name), never as metadata; the mapping names the aliased ones.
            let kept = validation.fields.filter { $0.isPresent && !$0.isEmpty && $0.schema.tokenization == nil }.map {
                ImportValue(
                    key: $0.schema.name,
                    request: AliasRequest(value: $0.outputText, format: .UUID, storage: .persistent),
                    inMapping: false)
            }
            found = [Self.rowID(values[Self.idColumn] ?? "")] + aliased + kept
        }
        do { try Vault.check(found.map(\.request)) } catch {
            return .failure(Self.refused(error.cloakError { "field \(found[$0].key)" }))
        }
        return .success(found)
    }

    /// The row's id as a value of its group: stored, deduplicated, never in the mapping's aliases
    /// (the mapping echoes the id itself).
    static func rowID(_ id: String) -> ImportValue {
        ImportValue(
            key: idColumn, request: AliasRequest(value: id, format: .UUID, storage: .persistent), inMapping: false)
    }

    /// `values` with each expiry in the layout its field takes: one column in any layout
    /// ``ExpiryLayouts`` reads, or a month and a year apart. One it cannot read is left as it
    /// was, for the field's rules to refuse with the SDK's words.
    private func expiriesRead(_ values: [String: String]) -> [String: String] {
        guard !expiries.isEmpty else { return values }
        var values = values
        for expiry in expiries {
            if let given = values[expiry.field], !given.isEmpty {
                if let read = ExpiryLayouts.normalize(given, to: expiry.format) { values[expiry.field] = read }
                continue
            }
            for pair in expiry.parts {
                guard let month = values[pair.month], let year = values[pair.year], !month.isEmpty || !year.isEmpty
                else { continue }
                values[expiry.field] =
                    ExpiryLayouts.combine(month: month, year: year, to: expiry.format) ?? "\(month)/\(year)"
                break
            }
        }
        return values
    }

    /// A job refused before it starts: its words may hold what the caller sent (a form's name, a
    /// map), so long digit runs are scrubbed (``Redaction/scrub(_:limit:)``).
    static func refusal(_ text: String) -> CloakError { .malformed(Redaction.scrub(text, limit: 400)) }

    static func refused(_ error: CloakError) -> ImportRefusal {
        ImportRefusal(code: error.code.rawValue, reason: error.message)
    }
}
