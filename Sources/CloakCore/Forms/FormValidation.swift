/// A whole submission checked against its form: one ``FieldResult`` per configured field.
public struct FormValidation: Sendable {
    public let form: FormSchema
    /// In configured order; absent fields are included (not dirty, empty).
    public let fields: [FieldResult]
    /// Each `file` field's state, by field index (nil for every other field): a file field has
    /// no text, and is judged by its files (``FileFieldState``). Empty for a form without file
    /// fields (the validate endpoint's hot path makes no array for it): read with ``file(_:)``.
    public let files: [FileFieldState?]

    /// The state of field `index` when it is a file field.
    public func file(_ index: Int) -> FileFieldState? { files.isEmpty ? nil : files[index] }

    /// Formats and validates every field of `form` against the submitted `values`.
    ///
    /// Card fields are processed before the CVCs linked to them, so a CVC's lengths follow the
    /// brand detected in the same submission.
    /// - Parameter values: by field index, nil for a field not sent; as many as the form has fields.
    /// - Parameter files: the files each `file` field holds, by field index (none: no file sent).
    public init(
        form: FormSchema, values: [String?], files: [Int: [FileInspection]] = [:], context: ValidationContext
    ) {
        precondition(values.count == form.fields.count, "one value slot per field")
        self.files =
            !form.hasFileFields
            ? []
            : form.fields.enumerated().map { i, field in
                field.fileRules.map { FileFieldState(files: files[i] ?? [], rules: $0) }
            }
        var context = context
        context.brands = form.brands
        let definitions = form.definitions
        // Written in place, every field once: the other fields first, then the CVCs, which read
        // the results of their (non-CVC) card fields.
        self.fields = [FieldResult](unsafeUninitializedCapacity: definitions.count) { results, count in
            for (i, definition) in definitions.enumerated() where definition.schema.type != .cvc {
                (results.baseAddress! + i).initialize(
                    to: FieldProcessor.process(definition, input: values[i], linkedCard: nil, context: context))
            }
            for (i, definition) in definitions.enumerated() where definition.schema.type == .cvc {
                let linked = form.cardFieldIndex[i].flatMap { results[$0].cardModel }
                (results.baseAddress! + i).initialize(
                    to: FieldProcessor.process(definition, input: values[i], linkedCard: linked, context: context))
            }
            count = definitions.count
        }
        self.form = form
    }

    /// Fields marked required whose raw text is empty (`VGSSDKErrorInputDataRequired`).
    public var requiredMissing: [String] {
        fields.indices.filter { i in
            if let file = file(i) { return file.validationErrors.contains(FileValidationError.required) }
            return fields[i].schema.isRequired && fields[i].isEmpty
        }.map { fields[$0].schema.name }
    }

    /// Fields marked required-valid-only that are invalid (`VGSSDKErrorInputDataRequiredValid`).
    /// A file field is refused whenever a file it holds is (nothing invalid is ever stored).
    public var requiredInvalid: [String] {
        fields.indices.filter { i in
            if let file = file(i) { return !file.isEmpty && !file.isValid }
            return fields[i].schema.isRequiredValidOnly && !fields[i].isValid
        }.map { fields[$0].schema.name }
    }

    /// Whether the submission passes the SDK's pre-send check.
    public var isValid: Bool { requiredMissing.isEmpty && requiredInvalid.isEmpty }

    /// The 1001 error the SDK returns before sending, or nil when the submission may be sent.
    public var inputError: CloakError? {
        let missing = requiredMissing
        let invalid = requiredInvalid
        guard !missing.isEmpty || !invalid.isEmpty else { return nil }
        var extra: [(key: String, value: JSONValue)] = []
        if !missing.isEmpty { extra.append(("VGSSDKErrorInputDataRequired", .strings(missing))) }
        if !invalid.isEmpty { extra.append(("VGSSDKErrorInputDataRequiredValid", .strings(invalid))) }
        let failing = Set(missing + invalid)
        extra.append(
            (
                "validationErrors",
                .object(
                    fields.indices.filter { failing.contains(fields[$0].schema.name) }.map {
                        (fields[$0].schema.name, .strings(file($0)?.validationErrors ?? fields[$0].validationErrors))
                    })
            ))
        // A refused file field names its limits and what its files were found to be.
        let refusedFiles: [(key: String, value: JSONValue)] = fields.indices.compactMap { i in
            guard failing.contains(fields[i].schema.name), let state = file(i), let rules = fields[i].schema.fileRules
            else { return nil }
            return (fields[i].schema.name, rules.refusalFacts(detected: state.refusedTypes))
        }
        if !refusedFiles.isEmpty { extra.append(("fileLimits", .object(refusedFiles))) }
        return CloakError(.inputDataIsNotValid, "Input data is not valid", extraInfo: extra)
    }

    /// The validate endpoint's answer: `{"isValid": bool, "fields": {name: state}}`.
    public var stateDocument: JSONValue { try! JSONParser().parse(stateJSON) }

    /// ``stateDocument`` as UTF-8 JSON, written directly (the hot path of the validate endpoint).
    public var stateJSON: [UInt8] {
        var writer = JSONWriter(reservingCapacity: 256 * fields.count + 64)
        writer.beginObject()
        writer.member("isValid", isValid)
        writer.key("fields" as StaticString)
        writer.beginObject()
        for field in fields { field.writeStateMember(into: &writer) }
        writer.endObject()
        writer.endObject()
        return writer.takeBytes()
    }
}
