/// A form: its fields in configured order, its card brands and its field-name mapping policy.
public struct FormSchema: Sendable {
    public let name: String
    public let fields: [FieldSchema]
    /// The same fields, each shared by reference with every result computed from it.
    let definitions: [FieldDefinition]
    public let brands: CardBrandTable
    public let mappingPolicy: MappingPolicy
    private let indexByName: [String: Int]
    private let names: [String]
    private let nameBytes: [[UInt8]]
    /// For each field: the index of its `card_field` when that names a field that is not a CVC.
    let cardFieldIndex: [Int?]
    /// Whether a field is of type `file` (its submissions are uploads).
    public let hasFileFields: Bool

    /// - Precondition: field names are unique (the configuration loader checks this first).
    public init(
        name: String, fields: [FieldSchema], brands: CardBrandTable = .standard,
        mappingPolicy: MappingPolicy = .nestedJSON
    ) {
        self.name = name
        self.fields = fields
        self.definitions = fields.map(FieldDefinition.init)
        self.brands = brands
        self.mappingPolicy = mappingPolicy
        self.names = fields.map(\.name)
        self.nameBytes = fields.map { Array($0.name.utf8) }
        let indexByName = Dictionary(fields.enumerated().map { ($1.name, $0) }, uniquingKeysWith: { a, _ in a })
        self.indexByName = indexByName
        self.hasFileFields = fields.contains { $0.type == .file }
        self.cardFieldIndex = fields.map { field in
            field.cardField.flatMap { indexByName[$0] }.flatMap { fields[$0].type == .cvc ? nil : $0 }
        }
    }

    /// The field whose name is these bytes of ASCII; nil for any other bytes (a name beyond
    /// ASCII is found by ``index(of:)``, which compares as `String` does). A small form's names
    /// are compared in turn, as in ``index(of:)``.
    ///
    /// - Parameter expected: the field tried first: clients send the fields in the form's order
    ///   nearly always, so the submission's n-th name is compared with the n-th field's first.
    func index(ofASCII bytes: UnsafeBufferPointer<UInt8>, expected: Int = 0) -> Int? {
        guard bytes.allSatisfy({ $0 < 0x80 }) else { return nil }
        if expected < nameBytes.count, nameBytes[expected].hasSameBytes(as: bytes) { return expected }
        guard names.count > 16 else {
            for (i, name) in nameBytes.enumerated() where name.hasSameBytes(as: bytes) { return i }
            return nil
        }
        return indexByName[String(decoding: bytes, as: UTF8.self)]
    }

    /// A small form's names are compared in turn (cheaper than hashing the name); a large one's
    /// are looked up.
    public func index(of fieldName: String) -> Int? {
        guard names.count > 16 else { return names.firstIndex(of: fieldName) }
        return indexByName[fieldName]
    }
}

/// `VGSCollectFieldNameMappingPolicy`: how field names become the outgoing JSON.
public enum MappingPolicy: String, Sendable, CaseIterable {
    case flatJSON
    case nestedJSON
    case nestedJSONWithArrayMerge
    case nestedJSONWithArrayOverwrite
}

/// One field's schema in a box, so results refer to it instead of copying it, with what the
/// field's answers repeat for every submission.
final class FieldDefinition: Sendable {
    let schema: FieldSchema
    /// `"<name>":{"isRequired":…,"isRequiredValidOnly":…`: how the field's state opens as a member
    /// of the validate answer's `fields` (see ``FieldResult/writeStateMember(into:)``).
    let statePrefix: [UInt8]

    init(_ schema: FieldSchema) {
        self.schema = schema
        var writer = JSONWriter(reservingCapacity: schema.name.utf8.count + 64)
        writer.key(schema.name)
        FieldResult.writeStateOpening(schema, into: &writer)
        self.statePrefix = writer.takeBytes()
    }
}
