import Foundation
import Testing

@testable import CloakCore

/// Shared helpers for the CloakCore suite. Nothing here calls into the code under test to
/// compute an expected value: Luhn digits, dates and random corpora are derived independently.

/// The fixed "today" most date tests use.
let fixedToday = CalendarDate(year: 2026, month: 11, day: 22)!
let fixedContext = ValidationContext(today: fixedToday)

/// The built-in model for a brand (test fixture lookup, not behaviour under test).
func builtInModel(_ brand: CardBrand) -> PaymentCardModel {
    guard let model = PaymentCardModel.builtIn.first(where: { $0.brand == brand }) else {
        fatalError("no built-in model for \(brand)")
    }
    return model
}

/// The thirteen built-in brands in the SDK's `defaultCardModels` order (reference §2).
let sdkBrandOrder: [CardBrand] = [
    .elo, .visaElectron, .maestro, .forbrugsforeningen, .dankort, .visa, .mastercard, .amex, .hipercard,
    .dinersClub, .discover, .unionpay, .jcb,
]

/// An independent, textbook Luhn (mod 10) used to build and check fixtures.
enum TestLuhn {
    static func sum(_ digits: [Int]) -> Int {
        var total = 0
        for (offset, d) in digits.reversed().enumerated() {
            if offset % 2 == 1 {
                let doubled = d * 2
                total += doubled > 9 ? doubled - 9 : doubled
            } else {
                total += d
            }
        }
        return total
    }

    static func passes(_ number: String) -> Bool {
        let digits = number.compactMap { $0.wholeNumberValue }
        return digits.count == number.count && sum(digits) % 10 == 0
    }

    /// The digit that, appended to `partial`, makes it pass.
    static func checkDigit(for partial: String) -> Int {
        let digits = partial.compactMap { $0.wholeNumberValue } + [0]
        return (10 - sum(digits) % 10) % 10
    }

    /// `prefix`, padded with `filler` digits, plus a check digit: `length` digits passing Luhn.
    static func number(prefix: String, length: Int, filler: Character = "0") -> String {
        precondition(prefix.count < length)
        let body = prefix + String(repeating: filler, count: length - 1 - prefix.count)
        return body + String(checkDigit(for: body))
    }

    /// The same number with its last digit changed so it fails Luhn.
    static func broken(_ number: String) -> String {
        let last = number.last!.wholeNumberValue!
        return String(number.dropLast()) + String((last + 1) % 10)
    }
}

/// SplitMix64: a small deterministic generator so random corpora are identical on every run.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Every string over `alphabet` of length `0...maxLength`, shortest first.
func allStrings(over alphabet: [Character], upTo maxLength: Int, includeEmpty: Bool = true) -> [String] {
    var result: [String] = includeEmpty ? [""] : []
    var layer: [String] = [""]
    for _ in 0..<maxLength {
        var next: [String] = []
        next.reserveCapacity(layer.count * alphabet.count)
        for s in layer {
            for c in alphabet { next.append(s + String(c)) }
        }
        result += next
        layer = next
    }
    return result
}

/// A fresh form field (FieldSchema is a value type; tweak it with `with`).
func field(_ name: String, _ type: FieldType, _ configure: (inout FieldSchema) -> Void = { _ in }) -> FieldSchema {
    var f = FieldSchema(name: name, type: type)
    configure(&f)
    return f
}

/// Runs FormValidation with values keyed by field name.
func validate(
    _ form: FormSchema, _ values: [String: String], context: ValidationContext = fixedContext
) -> FormValidation {
    var byIndex = [String?](repeating: nil, count: form.fields.count)
    for (name, value) in values {
        guard let i = form.index(of: name) else { fatalError("no field \(name)") }
        byIndex[i] = value
    }
    return FormValidation(form: form, values: byIndex, context: context)
}

extension FormValidation {
    func result(_ name: String) -> FieldResult {
        guard let r = fields.first(where: { $0.schema.name == name }) else { fatalError("no field \(name)") }
        return r
    }
}

extension JSONValue {
    var boolValue: Bool? {
        if case let .bool(b) = self { return b }
        return nil
    }
    var numberText: String? {
        if case let .number(n) = self { return n }
        return nil
    }
    var arrayStrings: [String]? {
        guard case let .array(a) = self else { return nil }
        let strings = a.compactMap(\.stringValue)
        return strings.count == a.count ? strings : nil
    }
}
