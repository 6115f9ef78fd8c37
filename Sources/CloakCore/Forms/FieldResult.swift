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
            return FieldSerializer.serializeExpDate(outputText, format: format, monthField: monthField, yearField: yearField)
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
        var raw = rawText
        raw.withUTF8 { utf8 in
            // Raw text is ASCII nearly always: then characters are bytes (but for CR LF, one
            // character), and the card's BIN and last four are byte ranges, copied as they are.
            let ascii = utf8.allSatisfy { $0 < 0x80 && $0 != 0x0D }
            guard ascii else { return writeState(nonASCII: rawText, into: &writer) }
            let length = utf8.count
            writer.beginObject()
            writer.member("isRequired", schema.isRequired)
            writer.member("isRequiredValidOnly", schema.isRequiredValidOnly)
            writer.member("isValid", isValid)
            writer.member("isEmpty", utf8.isEmpty)
            writer.member("isDirty", isPresent)
            writer.member("inputLength", length)
            writer.member("validationErrors", validationErrors)
            func slice(_ range: Range<Int>) -> UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(rebasing: utf8[range]) }
            switch schema.type {
            case .cardNumber:
                let model = cardModel ?? .unknown
                let binLength = model.brand.hasEightDigitBIN ? (length >= 16 ? 8 : 0) : min(6, length)
                writer.member("cardBrand", model.brand.id)
                writer.member("cardBrandName", model.name)
                writer.member("bin", utf8: isValid ? slice(0..<binLength) : slice(0..<0))
                writer.member("last4", utf8: isValid && length >= 12 ? slice(length - 4..<length) : slice(0..<0))
            case .ssn:
                writer.member("last4", utf8: isValid && length == 9 ? slice(5..<9) : slice(0..<0))
            default:
                break
            }
            writer.endObject()
        }
    }

    /// The same for raw text beyond ASCII, where characters and bytes differ.
    private func writeState(nonASCII raw: String, into writer: inout JSONWriter) {
        writer.beginObject()
        writer.member("isRequired", schema.isRequired)
        writer.member("isRequiredValidOnly", schema.isRequiredValidOnly)
        writer.member("isValid", isValid)
        writer.member("isEmpty", raw.isEmpty)
        writer.member("isDirty", isPresent)
        writer.member("inputLength", raw.count)
        writer.member("validationErrors", validationErrors)
        switch schema.type {
        case .cardNumber:
            let model = cardModel ?? .unknown
            var bin = ""
            var last4 = ""
            if isValid {
                if model.brand.hasEightDigitBIN {
                    bin = raw.count >= 16 ? String(raw.prefix(8)) : ""
                } else {
                    bin = String(raw.prefix(6))
                }
                if raw.count >= 12 { last4 = String(raw.suffix(4)) }
            }
            writer.member("cardBrand", model.brand.id)
            writer.member("cardBrandName", model.name)
            writer.member("bin", bin)
            writer.member("last4", last4)
        case .ssn:
            writer.member("last4", isValid && raw.count == 9 ? String(raw.suffix(4)) : "")
        default:
            break
        }
        writer.endObject()
    }

    init(definition: FieldDefinition, isPresent: Bool, rawText: String, outputText: String, validationErrors: [String],
         cardModel: PaymentCardModel?) {
        self.definition = definition
        self.isPresent = isPresent
        self.sensitiveRaw = Sensitive(rawText)
        self.sensitiveOutput = Sensitive(outputText)
        self.validationErrors = validationErrors
        self.cardModel = cardModel
    }
}
