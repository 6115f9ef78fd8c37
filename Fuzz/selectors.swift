// libFuzzer target: the route selectors' body parsers (Sources/CloakCore/Selectors): JSON paths,
// JSON and form selection and their rewrites, content types, egress path globs.
//
// Built by scripts/fuzz against CloakCore, compiled once for every target. The first byte
// picks the kind of input; the rest is the path text or the body. Properties: nothing crashes;
// rewriting every match with its own text gives a body that selects the same texts again; a
// form rewrite keeps every unselected pair's bytes.

import CloakCore

let paths = ["$.a", "$..pan", "$.items[*].n", "$['card[number]']", "$.a[0].b", "$.*"].map { try! JSONPath($0) }

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSelectors(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    switch data[0] % 5 {
    case 3:
        // A content type decides which selectors apply; any bytes classify without a crash.
        _ = SelectableBody(contentType: String(decoding: bytes, as: UTF8.self))
        return 0
    case 4:
        // An egress path pattern and a path, split at the first newline: a pattern without a
        // star matches exactly itself; "/*" matches every path.
        let text = String(decoding: bytes, as: UTF8.self)
        let parts = text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false)
        guard let glob = try? PathGlob(String(parts[0])) else { return 0 }
        let path = parts.count > 1 ? String(parts[1]) : String(parts[0])
        let matched = glob.matches(path)
        if !parts[0].contains("*") && matched != (String(parts[0]) == path) {
            fatalError("a literal pattern matched another path")
        }
        if path.hasPrefix("/"), !(try! PathGlob("/*")).matches(path) { fatalError("/* missed a path") }
        return 0
    case 0:
        if let path = try? JSONPath(String(decoding: bytes, as: UTF8.self)) {
            guard !path.steps.isEmpty else { fatalError("a parsed path without steps") }
            _ = path.locations(in: .object([("a", .array([.string("x"), .object([("b", .number("1"))])]))]))
        }
    case 1:
        guard let selection = try? JSONSelection.select(paths, in: bytes) else { return 0 }
        let texts = selection.matches.map(\.text.value)
        let rewritten = selection.rewrite(texts)
        guard let again = try? JSONSelection.select(paths, in: rewritten) else {
            fatalError("a rewrite lost its matches")
        }
        guard again.matches.map(\.text.value) == texts else { fatalError("rewriting with the same texts changed them") }
    default:
        let keys: Set<String> = ["card[number]", "a", ""]
        guard let selection = try? FormSelection.select(keys, in: bytes) else { return 0 }
        let texts = selection.matches.map(\.text.value)
        guard let again = try? FormSelection.select(keys, in: selection.rewrite(texts)),
            again.matches.map(\.text.value) == texts
        else { fatalError("a form rewrite with the same texts changed them") }
    }
    return 0
}
