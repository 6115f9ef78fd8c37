// libFuzzer target: the upstream client's response parser (Sources/CloakHTTP/Client/ResponseParser.swift).
//
// Built by scripts/fuzz with the parser, HTTPSyntax and HTTPMessage compiled as the module
// CloakHTTP over CloakCore. The first byte picks a split point and whether the request was HEAD;
// the rest is what an upstream sends. Properties: nothing crashes or hangs; the answer is the
// same whether it arrives in one read or two; an accepted answer has a final status, token
// names, values without CR or LF, and a body within the limit; nothing is accepted twice.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzResponse(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    let head = data[0] & 0x80 != 0
    let split = bytes.isEmpty ? 0 : Int(data[0] & 0x7F) % (bytes.count + 1)
    let whole = outcome(bytes, pieces: [bytes.count], head: head)
    let twice = outcome(bytes, pieces: [split, bytes.count - split], head: head)
    if whole != twice { fatalError("the answer depends on where a read ended") }
    return 0
}

/// What the parser made of `bytes` fed in `pieces`, then a close.
func outcome(_ bytes: [UInt8], pieces: [Int], head: Bool) -> String {
    var parser = ResponseParser(maxHeadBytes: 2048, maxBodyBytes: 4096, bodyless: head)
    var offset = 0
    var used: Int?
    do throws(ResponseParser.Failure) {
        for count in pieces where used == nil {
            let piece = Array(bytes[offset..<(offset + count)])
            if let n = try piece.withUnsafeBytes({ chunk in
                Result { () throws(ResponseParser.Failure) -> Int? in try parser.consume(chunk) }
            }).get() {
                used = offset + n
            }
            offset += count
        }
        if used == nil { try parser.close() }
    } catch {
        return "refused \(error)"
    }
    guard parser.isComplete else { fatalError("accepted without completing") }
    guard parser.status >= 200 && parser.status <= 599 else { fatalError("an interim or invalid status") }
    guard parser.body.count <= 4096 else { fatalError("a body past the limit") }
    for (name, value) in parser.headers {
        guard HTTPSyntax.isToken(name) else { fatalError("a name that is no token") }
        guard !value.utf8.contains(13) && !value.utf8.contains(10) else { fatalError("CR or LF in a value") }
    }
    return
        "\(parser.status) \(parser.headers.map { "\($0.name):\($0.value)" }) \(parser.body) \(parser.reusable) \(used ?? -1)"
}
