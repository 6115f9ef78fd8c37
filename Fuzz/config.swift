// libFuzzer target: the configuration reader (Sources/CloakService/Configuration) on YAML via Yams.
//
// scripts/fuzz compiles this file with the Configuration folder as a module named CloakService,
// against CloakCore, CloakCrypto and CloakHTTP (each compiled as its own module) and the Yams
// checkout in .build/checkouts/Yams (CYaml with clang, Yams with swiftc). The rest of
// CloakService (libevent server, vault, logging, metrics) is not needed and not compiled.
//
// Input: YAML text, optionally followed by 0x00 and `NAME=VALUE` lines used as the environment
// (CLOAK_* overrides). Invalid UTF-8 is skipped (`load` refuses it before parsing).
// Properties checked (a failure traps):
//  - parsing either succeeds or throws a ConfigurationError listing at least one issue;
//  - every form of an accepted configuration validates empty and sample submissions, and its
//    validate answer parses;
//  - for every configured pattern rule and transform, native matchers agree with ICU on samples.
import CloakCore
import Foundation

/// FUZZ_VERBOSE=1: print why an input was refused (to read what a corpus entry exercises).
private let verbose = ProcessInfo.processInfo.environment["FUZZ_VERBOSE"] != nil

private let samples = [
    "", "4111 1111 1111 1111", "378282246310005", "12/30", "2030/12", "07-04-1976", "123-45-6789", "(555)123-4567",
    "Jane Doe", "Zoë O'Brien", "abc", "A", "9", " ", "٣٤٥", "011000015",
]

private let today = CalendarDate(year: 2026, month: 1, day: 15)!

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzConfig(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    let split = bytes.firstIndex(of: 0) ?? size
    guard let yaml = String(validating: bytes[..<split], as: UTF8.self) else { return 0 }
    var environment: [String: String] = [:]
    if split < size {
        let text = String(decoding: bytes[(split + 1)...], as: UTF8.self)
        for line in text.split(separator: "\n") {
            guard let eq = line.firstIndex(of: "=") else { continue }
            environment[String(line[..<eq])] = String(line[line.index(after: eq)...])
        }
    }

    let configuration: ServiceConfiguration
    do {
        configuration = try ServiceConfiguration.parse(yaml: yaml, environment: environment)
    } catch {
        if error.issues.isEmpty { fatalError("a ConfigurationError without issues") }
        let description = error.description
        if verbose { print("refused:\n\(description)") }
        return 0
    }

    if verbose { print("accepted: \(configuration.forms.count) forms, \(configuration.routes.count) routes") }
    if !(0...65535).contains(configuration.server.port) { fatalError("port out of range") }
    for (name, form) in configuration.forms {
        if form.name != name { fatalError("form stored under another name") }
        for definition in form.fields {
            for case let rule as PatternRule in definition.rules ?? [] {
                for s in samples where rule.pattern.wholeMatch(s) != rule.pattern.icuWholeMatch(s) {
                    fatalError("native and ICU disagree on a configured pattern")
                }
            }
            if let t = definition.transform {
                for s in samples
                where t.matcher.replacingMatches(in: s, with: t.replacement)
                    != t.matcher.icuReplacingMatches(in: s, with: t.replacement)
                {
                    fatalError("native and ICU replacements disagree on a configured transform")
                }
            }
        }
        let context = ValidationContext(today: today)
        let none = [String?](repeating: nil, count: form.fields.count)
        for values in [none, form.fields.indices.map { Optional(samples[$0 % samples.count]) }] {
            let validation = FormValidation(form: form, values: values, context: context)
            do { _ = try JSONParser().parse(validation.stateJSON) } catch {
                fatalError("stateJSON does not parse: \(error)")
            }
            _ = validation.inputError
            let outputs = validation.fields.flatMap { $0.outputComponents.map { ($0.key, JSONValue.string($0.value)) } }
            _ = FieldNameMapper.body(outputs, extraData: [], policy: form.mappingPolicy)
        }
    }
    return 0
}
