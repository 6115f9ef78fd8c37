/// A collect submission: `{"fields": {name: "as typed"}, "extraData": {...}, "options": {...}}`.
///
/// The values and `extraData` travel wrapped in ``Sensitive``: the request prints redacted.
public struct CollectRequest: Sendable {
    private var sensitiveValues: Sensitive<[String?]>
    private var sensitiveExtraData: Sensitive<[(key: String, value: JSONValue)]>
    public var mappingPolicy: MappingPolicy?

    /// The submitted values by form field index (nil: the field was not sent).
    public var values: [String?] {
        get { sensitiveValues.value }
        set { sensitiveValues.value = newValue }
    }

    public var extraData: [(key: String, value: JSONValue)] {
        get { sensitiveExtraData.value }
        set { sensitiveExtraData.value = newValue }
    }

    /// Reads a submission for `form`.
    ///
    /// - Throws: ``CloakError`` 1002 for anything but an object with a `fields` object whose
    ///   members are strings named after the form's fields, each at most once. Messages name the
    ///   offending member (scrubbed) and never quote a value.
    public init(_ body: JSONValue, form: FormSchema) throws(CloakError) {
        guard case let .object(members) = body else {
            throw .malformed("the body must be a JSON object, not \(body.typeName)")
        }
        var fields: [(key: String, value: JSONValue)]?
        var extraData: [(key: String, value: JSONValue)] = []
        var policy: MappingPolicy?
        for (key, value) in members {
            switch key {
            case "fields":
                guard fields == nil else { throw .malformed("\"fields\" appears twice") }
                guard case let .object(f) = value else {
                    throw .malformed("\"fields\" must be an object, not \(value.typeName)")
                }
                fields = f
            case "extraData":
                guard case let .object(e) = value else {
                    throw .malformed("\"extraData\" must be an object, not \(value.typeName)")
                }
                extraData = e
            case "options":
                policy = try Self.mappingPolicy(options: value)
            default:
                throw .malformed(
                    "unknown member \"\(Redaction.scrub(key, limit: 64))\"; expected fields, extraData, options")
            }
        }
        guard let fields else { throw .malformed("the body has no \"fields\" object") }
        var values = [String?](repeating: nil, count: form.fields.count)
        for (name, value) in fields {
            guard let index = form.index(of: name) else {
                throw .malformed("unknown field \"\(Redaction.scrub(name, limit: 64))\" for form \(form.name)")
            }
            guard case let .string(text) = value else {
                throw .malformed("field \"\(name)\" must be a string, not \(value.typeName)")
            }
            guard values[index] == nil else { throw .malformed("field \"\(name)\" appears twice") }
            values[index] = text
        }
        self.init(values: values, extraData: extraData, mappingPolicy: policy)
    }

    init(values: [String?], extraData: [(key: String, value: JSONValue)], mappingPolicy: MappingPolicy?) {
        self.sensitiveValues = Sensitive(values)
        self.sensitiveExtraData = Sensitive(extraData)
        self.mappingPolicy = mappingPolicy
    }

    /// The mapping policy an `options` member asks for (the last one named, none when empty).
    static func mappingPolicy(options value: JSONValue) throws(CloakError) -> MappingPolicy? {
        guard case let .object(options) = value else {
            throw .malformed("\"options\" must be an object, not \(value.typeName)")
        }
        var policy: MappingPolicy?
        for (optionKey, optionValue) in options {
            guard optionKey == "fieldNameMappingPolicy" else {
                throw .malformed("unknown option \"\(Redaction.scrub(optionKey, limit: 64))\"")
            }
            guard let name = optionValue.stringValue, let p = MappingPolicy(rawValue: name) else {
                throw .malformed(
                    "options.fieldNameMappingPolicy must be one of "
                        + MappingPolicy.allCases.map(\.rawValue).joined(separator: ", "))
            }
            policy = p
        }
        return policy
    }
}
