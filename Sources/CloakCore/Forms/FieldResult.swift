/// One field of a submission after formatting and validation.
///
/// Holds the raw and output text, so it is sensitive: only ``state`` (which never includes
/// them) may leave the process as is. Its description is redacted.
///
/// A final class: results are passed between the validation, the answer and (for submissions)
/// the vault, and sharing them is one retain.
public final class FieldResult: Sendable, CustomStringConvertible {
    private let definition: FieldDefinition
    public var schema: FieldSchema { definition.schema }
    /// The field was in the submission (`isDirty`).
    public let isPresent: Bool
    private let sensitiveRaw: Sensitive<String>
    private let sensitiveOutput: Sensitive<String>
    /// What the rules ran on.
    public var rawText: String { sensitiveRaw.value }
    /// What is aliased or forwarded: layout, divider and date conversion applied.
    public var outputText: String { sensitiveOutput.value }
    public let validationErrors: [String]
    /// The detected brand, for card numbers.
    public let cardModel: PaymentCardModel?
    /// A card number's attributes from the BIN table, by the digits its state shows as `bin`
    /// (never more): nil when the state shows none, or no range holds them.
    public let cardAttributes: CardAttributes?
    /// Whether the state shows the card's `bin` and `last4`: when valid, or refused by its
    /// `accept` rule alone.
    let showsCard: Bool

    public var isValid: Bool { validationErrors.isEmpty }
    public var isEmpty: Bool { rawText.isEmpty }

    public var description: String { "FieldResult(\(schema.name), valid: \(isValid), length: \(rawText.count))" }

    /// The component values to emit: serializer components, or the field itself.
    public var outputComponents: [(key: String, value: String)] {
        switch schema.serializer {
        case nil:
            return [(schema.name, outputText)]
        case let .expDate(monthField, yearField)?:
            var format: ExpDateFormat?
            if case let .expDate(f)? = schema.outputDateFormat { format = f }
            return FieldSerializer.serializeExpDate(
                outputText, format: format, monthField: monthField, yearField: yearField)
        case let .date(dayField, monthField, yearField)?:
            var format: DateFormat?
            if case let .date(f)? = schema.outputDateFormat { format = f }
            return FieldSerializer.serializeDate(
                outputText, format: format, dayField: dayField, monthField: monthField, yearField: yearField)
        }
    }

    /// The SDK's field state: never the raw value.
    public var state: JSONValue {
        var writer = JSONWriter()
        writeState(into: &writer)
        return try! JSONParser().parse(writer.bytes)  // the writer's own output always parses
    }

    /// Writes the field state object (see ``state``) into `writer`.
    public func writeState(into writer: inout JSONWriter) {
        Self.writeStateOpening(schema, into: &writer)
        writeStateRest(into: &writer)
    }

    /// Writes the field's name and state as a member of an object, the opening copied as the
    /// definition keeps it.
    public func writeStateMember(into writer: inout JSONWriter) {
        writer.rawMember(definition.statePrefix)
        writeStateRest(into: &writer)
    }

    /// The state's opening brace and its members fixed by the schema.
    static func writeStateOpening(_ schema: FieldSchema, into writer: inout JSONWriter) {
        writer.beginObject()
        writer.member("isRequired", schema.isRequired)
        writer.member("isRequiredValidOnly", schema.isRequiredValidOnly)
    }

    /// `"isValid":…,"isEmpty":…,"isDirty":…` for each combination (index: isValid 4, isEmpty 2,
    /// isDirty 1), written in one copy.
    private static let flagMembers: [[UInt8]] = (0..<8).map { bits in
        var writer = JSONWriter(reservingCapacity: 64)
        writer.beginObject()
        writer.member("isValid", bits & 4 != 0)
        writer.member("isEmpty", bits & 2 != 0)
        writer.member("isDirty", bits & 1 != 0)
        return Array(writer.bytes.dropFirst())  // without the brace
    }

    /// How many of a card number's first digits its state shows as `bin` (when valid): 8 for a
    /// brand with eight-digit BINs and 16 digits or more, else 6.
    static func binLength(_ model: PaymentCardModel, length: Int) -> Int {
        model.brand.hasEightDigitBIN ? (length >= 16 ? 8 : 0) : min(6, length)
    }

    /// The state's members that depend on the submission, and its closing brace.
    private func writeStateRest(into writer: inout JSONWriter) {
        var raw = rawText
        raw.withUTF8 { utf8 in
            // Raw text is ASCII nearly always: then characters are bytes (but for CR LF, one
            // character), and the card's BIN and last four are byte ranges, copied as they are.
            let ascii = utf8.allSatisfy { $0 < 0x80 && $0 != 0x0D }
            let length = ascii ? utf8.count : rawText.count
            /// Characters `range` of the raw text as a member (empty when `shown` is false).
            func member(_ name: StaticString, _ range: Range<Int>, shown: Bool) {
                let range = shown ? range : 0..<0
                if ascii {
                    writer.member(name, utf8: UnsafeBufferPointer(rebasing: utf8[range]))
                } else {
                    writer.member(name, String(rawText.dropFirst(range.lowerBound).prefix(range.count)))
                }
            }
            writer.rawMember(Self.flagMembers[(isValid ? 4 : 0) | (utf8.isEmpty ? 2 : 0) | (isPresent ? 1 : 0)])
            writer.member("inputLength", length)
            writer.member("validationErrors", validationErrors)
            switch schema.type {
            case .cardNumber:
                let model = cardModel ?? .unknown
                let binLength = Self.binLength(model, length: length)
                writer.member("cardBrand", model.brand.id)
                writer.member("cardBrandName", model.name)
                member("bin", 0..<binLength, shown: showsCard)
                member("last4", length - 4..<length, shown: showsCard && length >= 12)
                if let cardAttributes {
                    writer.key("cardAttributes" as StaticString)
                    writer.write(cardAttributes.json)
                }
            case .ssn:
                member("last4", length - 4..<length, shown: isValid && length == 9)
            default:
                break
            }
            writer.endObject()
        }
    }

    init(
        definition: FieldDefinition, isPresent: Bool, rawText: String, outputText: String, validationErrors: [String],
        cardModel: PaymentCardModel?, cardAttributes: CardAttributes? = nil, showsCard: Bool? = nil
    ) {
        self.definition = definition
        self.isPresent = isPresent
        self.sensitiveRaw = Sensitive(rawText)
        self.sensitiveOutput = Sensitive(outputText)
        self.validationErrors = validationErrors
        self.cardModel = cardModel
        self.cardAttributes = cardAttributes
        self.showsCard = showsCard ?? validationErrors.isEmpty
    }
}
