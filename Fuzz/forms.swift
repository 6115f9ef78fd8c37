// libFuzzer target: the collect request and form validation (Sources/CloakCore/Forms), then the
// field-name mapping of the outputs, as the /validate and /send endpoints run them (no vault).
//
// Input: byte 0 picks a form (low bits) and a mode (bit 7); the rest is either
//  - a collect request body (JSON), read by CollectRequest, or
//  - raw values, one per form field in order, separated by 0x00 (skips the JSON layer).
// Properties checked (a failure traps):
//  - a refused request's message never quotes a submitted value (every string value is swapped
//    for a canary and the request read again);
//  - one result per field; the validate answer (stateJSON) parses;
//  - no run of 9+ digits in the validate answer, the 1001 error or any result's description;
//  - isValid agrees with inputError; native and ICU matchers agree on the first value.

import CloakCore

private func regex(_ s: String) -> RegexPattern { try! RegexPattern(s) }

private func field(_ name: String, _ type: FieldType, _ configure: (inout FieldSchema) -> Void = { _ in })
    -> FieldSchema
{
    var f = FieldSchema(name: name, type: type)
    configure(&f)
    return f
}

private let digit = InputMask.Position.pattern(regex(#"\d"#))

/// config/cloak.yaml's checkout: every card type, a CVC linked to the card, a split expiry, a masked phone.
private let checkout = FormSchema(
    name: "checkout",
    fields: [
        field("card_data.card_number", .cardNumber) {
            $0.isRequired = true; $0.isRequiredValidOnly = true
            $0.tokenization = .init(format: .FPE_SIX_T_FOUR, storage: .persistent)
        },
        field("card_data.card_cvc", .cvc) {
            $0.cardField = "card_data.card_number"; $0.isRequired = true; $0.isRequiredValidOnly = true
        },
        field("card_data.exp_date", .expDate) {
            $0.isRequired = true; $0.isRequiredValidOnly = true
            $0.inputDateFormat = .expDate(.shortYear); $0.outputDateFormat = .expDate(.longYear)
            $0.serializer = .expDate(monthField: "card_data.exp_month", yearField: "card_data.exp_year")
        },
        field("card_data.card_holder", .cardHolderName) { $0.isRequired = true },
        field("billing.phone", .none) {
            $0.mask = InputMask([
                .literal("("), digit, digit, digit, .literal(")"), digit, digit, digit, .literal("-"),
                digit, digit, digit, digit,
            ])
            $0.transform = InputTransform(matcher: regex("[()-]"), replacement: "")
            $0.rules = [PatternRule(pattern: regex(#"^\d{10}$"#), error: "PHONE_VALIDATION_ERROR")]
        },
        field("customer.ssn", .ssn) { $0.isRequiredValidOnly = true },
    ], mappingPolicy: .nestedJSON)

/// config/cloak.yaml's identity: date range and conversion, a date serializer, ABA routing.
private let identity = FormSchema(
    name: "identity",
    fields: [
        field("person.full_name", .cardHolderName) {
            $0.isRequired = true
            $0.rules = [
                LengthRule(min: 2, max: 100),
                PatternRule(pattern: regex(#"^[\p{L} .'-]+$"#), error: "NAME_VALIDATION_ERROR"),
            ]
        },
        field("person.birth_date", .date) {
            $0.isRequired = true; $0.isRequiredValidOnly = true
            $0.rules = [
                DateRangeRule(
                    format: .mmddyyyy, start: CalendarDate(iso: "1900-01-01"), end: CalendarDate(iso: "2010-12-31"))
            ]
            $0.inputDateFormat = .date(.mmddyyyy); $0.outputDateFormat = .date(.yyyymmdd)
            $0.serializer = .date(
                dayField: "person.dob.day", monthField: "person.dob.month", yearField: "person.dob.year")
        },
        field("person.ssn", .ssn) {
            $0.isRequired = true; $0.isRequiredValidOnly = true
        },
        field("bank.routing_number", .none) {
            $0.formatPattern = FormatPattern("#########"); $0.rules = [ABARoutingNumberRule()]
        },
        field("bank.account_number", .none) { $0.rules = [PatternRule(pattern: regex(#"^\d{4,17}$"#))] },
    ], mappingPolicy: .nestedJSONWithArrayMerge)

/// Custom brands (one without Luhn, an odd layout), array-indexed names, explicit patterns and
/// dividers, every date format, a mask with trailing literals and a whitespace transform.
private let acme = PaymentCardModel(
    brand: .custom("acme"), name: "acme", matcher: BrandMatcher(regex: regex(#"^9911\d*$"#)), cardNumberLengths: [16],
    cvcLengths: [3], luhn: true, formatPattern: "#### #### #### ####")
private let odd = PaymentCardModel(
    brand: .custom("odd"), name: "odd", matcher: BrandMatcher(regex: regex("^7[0-9]*$")), cardNumberLengths: [8, 19],
    cvcLengths: [4, 5], luhn: false, formatPattern: "@@## **AA ####-")
private let edge = FormSchema(
    name: "edge",
    fields: [
        field("cards[0].number", .cardNumber) {
            $0.rules = [PaymentCardRule(validateUnknownCardBrand: true), LuhnRule()]; $0.divider = "-"
        },
        field("cards[0].cvc", .cvc) { $0.cardField = "cards[0].number" },
        field("cvc2", .cvc) { $0.formatPattern = FormatPattern("###") },
        field("cards[1].exp", .expDate) {
            $0.formatPattern = FormatPattern("####/##"); $0.divider = "."
            $0.rules = [CardExpirationDateRule(format: .longYearThenMonth)]
            $0.inputDateFormat = .expDate(.longYearThenMonth); $0.outputDateFormat = .expDate(.shortYearThenMonth)
            $0.serializer = .expDate(monthField: "cards[1].m", yearField: "cards[1].y")
        },
        field("exp2", .expDate) {
            $0.inputDateFormat = .expDate(.longYear); $0.outputDateFormat = .expDate(.shortYearThenMonth)
            $0.serializer = .expDate(monthField: "exp2m", yearField: "exp2y")
        },
        field("dob", .date) {
            $0.formatPattern = FormatPattern("##.##.####"); $0.divider = ""
            $0.inputDateFormat = .date(.ddmmyyyy); $0.outputDateFormat = .date(.mmddyyyy)
            $0.rules = [DateRangeRule(format: .ddmmyyyy)]
        },
        field("dob2", .date) {
            $0.inputDateFormat = .date(.yyyymmdd); $0.outputDateFormat = .date(.ddmmyyyy)
        },
        field("code", .none) {
            $0.mask = InputMask([
                .literal("A"), .pattern(regex("[a-zA-Z]")), .pattern(regex(".")), .literal("-"),
                .pattern(regex("[0-9]")), .literal("/"), .literal("é"),
            ])
            $0.transform = InputTransform(matcher: regex(#"\s+"#), replacement: "_$0")
        },
        field("tag", .none) {
            $0.formatPattern = FormatPattern(""); $0.rules = [LengthMatchRule(lengths: [0, 3, 5])]
        },
        field("holder", .cardHolderName) {
            $0.formatPattern = FormatPattern("AAAA aaaa **"); $0.divider = "*"
        },
        field("ids.ssn[2]", .ssn) {
            $0.divider = " "; $0.formatPattern = FormatPattern("###-##-####")
        },
        field("plain.text", .none) { $0.transform = InputTransform(matcher: regex("[ .-]"), replacement: "") },
    ],
    brands: CardBrandTable(
        custom: [acme, odd],
        accepted: [.custom("acme"), .custom("odd"), .visa, .amex, .unionpay, .maestro, .mastercard]),
    mappingPolicy: .flatJSON)

private let forms = [checkout, identity, edge]
private let context = ValidationContext(today: CalendarDate(year: 2026, month: 1, day: 15)!)

/// Patterns with a native matcher and ICU fallback: the two must agree.
private let differential: [RegexPattern] =
    FieldType.allCases.filter { !$0.defaultRegex.isEmpty && $0 != .cardNumber }
    .map { regex($0.defaultRegex) } + [
        regex(#"\d"#), regex("[0-9]"), regex("[a-zA-Z]"), regex(#"^\d{10}$"#), regex(#"^\d{4,17}$"#),
    ]
private let classes = [regex("[()-]"), regex("[ .-]")]

private func check(_ ok: Bool, _ what: @autoclosure () -> String) {
    if !ok { fatalError(what()) }
}

/// The longest run of ASCII digits (what the answers are written in).
private func longestDigitRun<C: Collection<UInt8>>(_ bytes: C) -> Int {
    var best = 0, run = 0
    for b in bytes {
        if b >= 48 && b <= 57 { run += 1; best = max(best, run) } else { run = 0 }
    }
    return best
}

private func longestDigitRun(_ s: String) -> Int { longestDigitRun(s.utf8) }

private let canary = "\u{7}CANARY\u{7}"

/// The same document with every string value (not key) replaced by the canary.
private func canaried(_ v: JSONValue) -> JSONValue {
    switch v {
    case .string: return .string(canary)
    case let .array(a): return .array(a.map(canaried))
    case let .object(m): return .object(m.map { ($0.key, canaried($0.value)) })
    default: return v
    }
}

private func keys(_ v: JSONValue, into out: inout [String]) {
    switch v {
    case let .array(a): for e in a { keys(e, into: &out) }
    case let .object(m): for (k, e) in m { out.append(k); keys(e, into: &out) }
    default: break
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzForms(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 1 else { return 0 }
    let form = forms[Int(data[0] & 0x7F) % forms.count]
    let rest = UnsafeBufferPointer(start: data + 1, count: size - 1)

    var values = [String?](repeating: nil, count: form.fields.count)
    var extraData: [(key: String, value: JSONValue)] = []
    var policy = form.mappingPolicy
    if data[0] & 0x80 == 0 {
        // The byte reader of submissions: whatever it accepts, the general path accepts the same way.
        let fast = CollectRequest.reading(Array(rest), form: form)
        guard let body = try? JSONParser().parse(UnsafeRawBufferPointer(rest)) else {
            check(fast == nil, "the byte reader accepted what the parser refuses")
            return 0
        }
        do {
            let request = try CollectRequest(body, form: form)
            values = request.values
            extraData = request.extraData
            policy = request.mappingPolicy ?? policy
            check(values.count == form.fields.count, "one value slot per field")
            if let fast {
                check(
                    fast.values == request.values && fast.mappingPolicy == request.mappingPolicy
                        && fast.extraData.count == request.extraData.count
                        && zip(fast.extraData, request.extraData).allSatisfy {
                            $0.key == $1.key && $0.value == $1.value
                        },
                    "the byte reader and the general path read different requests")
            }
        } catch {
            check(fast == nil, "the byte reader accepted what the general path refuses")
            check(error.code == .malformedRequest, "a refused request is not 1002: \(error.code)")
            // Re-read with every value replaced: the message must not contain any of them.
            var all: [String] = []
            keys(body, into: &all)
            if !all.contains(where: { $0.contains("CANARY") }) {
                do {
                    _ = try CollectRequest(canaried(body), form: form)
                } catch let again {
                    check(!again.description.contains("CANARY"), "a 1002 message quotes a submitted value: \(again)")
                }
            }
            return 0
        }
    } else {
        var i = 0
        for chunk in rest.split(separator: 0, omittingEmptySubsequences: false) where i < form.fields.count {
            if !chunk.isEmpty || i % 2 == 0 { values[i] = String(decoding: chunk, as: UTF8.self) }
            i += 1
        }
    }

    // Native matchers against ICU, on the value of the lowest field index (ICU is slow).
    if let value = values.lazy.compactMap({ $0 }).first {
        for p in differential {
            check(p.wholeMatch(value) == p.icuWholeMatch(value), "native and ICU disagree: /\(p.source)/")
        }
        for p in classes {
            check(
                p.replacingMatches(in: value, with: "") == p.icuReplacingMatches(in: value, with: ""),
                "native and ICU replacements disagree: /\(p.source)/")
        }
    }

    let validation = FormValidation(form: form, values: values, context: context)
    check(validation.fields.count == form.fields.count, "one result per field")
    let json = validation.stateJSON
    do { _ = try JSONParser().parse(json) } catch { fatalError("stateJSON does not parse: \(error)") }
    check(longestDigitRun(json) <= 8, "the validate answer holds 9+ digits in a row")
    let inputError = validation.inputError
    check(validation.isValid == (inputError == nil), "isValid disagrees with inputError")
    if let inputError {
        check(inputError.code == .inputDataIsNotValid, "inputError is not 1001")
        check(
            longestDigitRun(inputError.description) <= 8
                && longestDigitRun(JSONWriter.string(.object(inputError.extraInfo))) <= 8,
            "the 1001 error holds 9+ digits in a row")
    }

    var outputs: [(name: String, value: JSONValue)] = []
    for (i, result) in validation.fields.enumerated() {
        check(result.schema.name == form.fields[i].name, "results out of order")
        check(result.isPresent == (values[i] != nil), "isDirty wrong")
        check(longestDigitRun(result.description) <= 8, "a result's description holds 9+ digits in a row")
        if result.isPresent {
            for (key, value) in result.outputComponents { outputs.append((key, .string(value))) }
        }
    }
    // /send without the vault: the outputs under the request's (or form's) mapping policy.
    let body = FieldNameMapper.body(outputs, extraData: extraData, policy: policy)
    guard case .object = body else { fatalError("the mapped body is not an object") }
    _ = JSONWriter.encode(body)
    return 0
}
