// libFuzzer target: the JSON parser and writer (Sources/CloakCore/JSON).
//
// Built by scripts/fuzz against CloakCore, compiled once for every target.
// Property: any bytes either fail to parse, or parse to a value whose written form parses back
// to an equal value, and writing that value again gives the same bytes. Parse errors of any
// type are accepted, so rejecting duplicate keys (1002) or not both pass.

import CloakCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSON(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let parser = JSONParser()
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    guard let value = try? parser.parse(bytes) else { return 0 }

    let written = JSONWriter.encode(value)
    guard String(validating: written, as: UTF8.self) != nil else {
        fatalError("JSONWriter produced invalid UTF-8")
    }
    let reparsed: JSONValue
    do {
        reparsed = try parser.parse(written)
    } catch {
        fatalError("the writer's output does not parse: \(error)")
    }
    guard reparsed == value else { fatalError("write then parse changed the value") }
    guard JSONWriter.encode(reparsed) == written else { fatalError("writing is not stable") }

    // The read-only accessors on the parsed tree.
    _ = value.typeName
    if let members = value.objectMembers, let first = members.first {
        guard value[first.key] != nil else { fatalError("subscript misses a member that exists") }
    }
    // A shallower parser must either agree or refuse.
    if let shallow = try? JSONParser(maxDepth: 2).parse(bytes), shallow != value {
        fatalError("maxDepth changed a parsed value")
    }
    return 0
}
