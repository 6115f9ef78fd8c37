/// A form: its fields in configured order, its card brands and its field-name mapping policy.
public struct FormSchema: Sendable {
    public let name: String
    public let fields: [FieldSchema]
    /// The same fields, each shared by reference with every result computed from it.
    let definitions: [FieldDefinition]
    public let brands: CardBrandTable
    public let mappingPolicy: MappingPolicy
    private let indexByName: [String: Int]

    /// - Precondition: field names are unique (the configuration loader checks this first).
    public init(name: String, fields: [FieldSchema], brands: CardBrandTable = .standard,
                mappingPolicy: MappingPolicy = .nestedJSON) {
        self.name = name
        self.fields = fields
        self.definitions = fields.map(FieldDefinition.init)
        self.brands = brands
        self.mappingPolicy = mappingPolicy
        self.indexByName = Dictionary(fields.enumerated().map { ($1.name, $0) }, uniquingKeysWith: { a, _ in a })
    }

    public func index(of fieldName: String) -> Int? { indexByName[fieldName] }
}

/// `VGSCollectFieldNameMappingPolicy`: how field names become the outgoing JSON.
public enum MappingPolicy: String, Sendable, CaseIterable {
    case flatJSON
    case nestedJSON
    case nestedJSONWithArrayMerge
    case nestedJSONWithArrayOverwrite
}

/// One field's schema in a box, so results refer to it instead of copying it.
final class FieldDefinition: Sendable {
    let schema: FieldSchema
    init(_ schema: FieldSchema) { self.schema = schema }
}
