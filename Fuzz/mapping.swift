// libFuzzer target: field-name mapping (Sources/CloakCore/Mapping: FieldNameSubscript,
// FieldNameMapper and JSONMerge) with fuzzer-chosen names, values, extraData and policy.
//
// Input: byte 0 picks the policy (bits 0-1) and whether values may be JSON (bit 2); the rest is
// split on 0x00: the first chunk is extraData (a JSON object, else none), then name, value pairs.
// A value chunk is a string, or (bit 2) the JSON value it parses to.
// Properties checked (a failure traps):
//  - the written body parses back to an equal value (unless it repeats a key, which a parser
//    rejecting duplicates may refuse);
//  - field values win: the last field's scalar value is found at its name's place (flatJSON: the
//    key itself; nestedJSON: the dotted keys; the array policies: keys and indexes, for
//    ArrayMerge only when there is no extraData, since merged arrays append).
//  - huge indexes are capped: FieldNameSubscript.parse never returns an index over
//    FieldNameSubscript.maxIndex, so `x[85555555].y` cannot pad an array to 85 million nulls.
//    (The target feeds such names unbounded; without the cap they would end in an OOM.)

import CloakCore

private func hasDuplicateKeys(_ v: JSONValue) -> Bool {
    switch v {
    case let .array(a): return a.contains(where: hasDuplicateKeys)
    case let .object(m):
        var seen = Set<String>()
        for (k, e) in m where !seen.insert(k).inserted || hasDuplicateKeys(e) { return true }
        return false
    default: return false
    }
}

private func isScalar(_ v: JSONValue) -> Bool {
    switch v {
    case .array, .object: return false
    default: return true
    }
}

private func lookup(_ root: JSONValue, _ path: [FieldNameSubscript]) -> JSONValue? {
    var node = root
    for step in path {
        switch step {
        case let .key(k):
            guard let next = node[k] else { return nil }
            node = next
        case let .index(i):
            guard case let .array(a) = node, a.indices.contains(i) else { return nil }
            node = a[i]
        }
    }
    return node
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzMapping(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 1 else { return 0 }
    let policy = MappingPolicy.allCases[Int(data[0] & 3)]
    let jsonValues = data[0] & 4 != 0
    let chunks = UnsafeBufferPointer(start: data + 1, count: size - 1).split(
        separator: 0, omittingEmptySubsequences: false)
    guard let first = chunks.first else { return 0 }

    let parser = JSONParser()
    var extraData: [(key: String, value: JSONValue)] = []
    if let members = (try? parser.parse(Array(first)))?.objectMembers { extraData = members }

    var fields: [(name: String, value: JSONValue)] = []
    var i = 1
    while i < chunks.count {
        let name = String(decoding: chunks[i], as: UTF8.self)
        let raw = i + 1 < chunks.count ? Array(chunks[i + 1]) : []
        var value = JSONValue.string(String(decoding: raw, as: UTF8.self))
        if jsonValues, let v = try? parser.parse(raw) { value = v }
        fields.append((name, value))
        i += 2
    }

    for field in fields {
        for case let .index(n) in FieldNameSubscript.parse(field.name) where n > FieldNameSubscript.maxIndex {
            fatalError("an index over the cap: \(n)")
        }
    }

    let body = FieldNameMapper.body(fields, extraData: extraData, policy: policy)

    // Round trip through the writer (any depth: names with many dots nest deeper than 64).
    let written = JSONWriter.encode(body)
    if let reparsed = try? JSONParser(maxDepth: .max).parse(written) {
        if reparsed != body { fatalError("the mapped body changes when written and parsed") }
    } else if !hasDuplicateKeys(body) {
        fatalError("the mapped body's JSON does not parse")
    }

    // Field values win.
    guard let last = fields.last, isScalar(last.value) else { return 0 }
    let path: [FieldNameSubscript]
    switch policy {
    case .flatJSON:
        path = [.key(last.name)]
    case .nestedJSON:
        path = last.name.split(separator: ".", omittingEmptySubsequences: true).map { .key(String($0)) }
    case .nestedJSONWithArrayMerge, .nestedJSONWithArrayOverwrite:
        if policy == .nestedJSONWithArrayMerge && !extraData.isEmpty { return 0 }
        path = FieldNameSubscript.parse(last.name)
    }
    if path.isEmpty { return 0 }  // a name of dots only: the body is the value itself (see the report)
    guard case .object = body else { fatalError("the mapped body is not an object") }
    guard let found = lookup(body, path), found == last.value else {
        fatalError("the last field's value is not at its place in the body (\(policy))")
    }
    return 0
}
