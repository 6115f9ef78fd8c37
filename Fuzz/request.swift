// libFuzzer target: the server's request parser (Sources/CloakHTTP/HTTP1/RequestParser.swift over
// RequestFraming).
//
// Built by scripts/fuzz with the parser, the framing scan and HTTPSyntax compiled as the module
// CloakHTTP over CloakCore. The first byte picks a piece size; the rest is what a client sends.
// Properties: nothing crashes or hangs; what the parser reads (heads, bodies, ends, its verdict)
// is the same whether the bytes come at once or in pieces; the verdict is the framing scan's
// whenever the parser's own rules (request line, Host, head limits) have nothing to say; a body
// range lies within the bytes given; a length body has exactly its length; a head has a token
// method and names, and values without CR, LF or NUL.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRequest(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    let piece = Int(data[0] % 17) + 1
    let whole = reading(bytes, piece: bytes.count + 1)
    let pieces = reading(bytes, piece: piece)
    if whole != pieces { fatalError("the reading depends on where a read ended") }
    // The framing scan's own verdict on the same bytes.
    var framing = RequestFraming()
    bytes.withUnsafeBytes { _ = framing.consume($0) }
    if case .violated(let violation) = framing.verdict, !whole.contains("own:") {
        if !whole.hasSuffix("refused \(RequestParser.BrokenRule.framing(violation))") {
            fatalError("the framing refused what the parser did not: \(violation)")
        }
    }
    return 0
}

/// What the parser made of `bytes` fed `piece` bytes at a time, as text.
func reading(_ bytes: [UInt8], piece: Int) -> String {
    var parser = RequestParser(limits: .init(maxHeadBytes: 1024, maxFields: 16))
    var out = ""
    var pending: [UInt8] = []
    var offset = 0
    var bodyLength: UInt64 = 0
    var body: [UInt8] = []
    var expected: UInt64?
    var inMessage = false
    while true {
        let step = min(piece, bytes.count - offset)
        pending += bytes[offset..<(offset + step)]
        offset += step
        while true {
            let (consumed, event) = pending.withUnsafeBytes { parser.parse($0) }
            guard consumed <= pending.count else { fatalError("consumed more than given") }
            switch event {
            case .needMore:
                guard consumed == pending.count else { fatalError("needMore left bytes") }
            case .head(let head):
                guard !inMessage else { fatalError("a head inside a message") }
                guard head.method.utf8.allSatisfy(HTTPSyntax.isTokenByte) else {
                    fatalError("a method that is no token")
                }
                for (name, value) in head.headers {
                    guard HTTPSyntax.isToken(name) else { fatalError("a name that is no token") }
                    guard !value.utf8.contains(where: { $0 == 13 || $0 == 10 || $0 == 0 }) else {
                        fatalError("CR, LF or NUL in a value")
                    }
                }
                inMessage = true
                bodyLength = 0
                body = []
                if case .length(let length) = head.body { expected = length } else { expected = nil }
                out += "head \(head.method) \(head.target) \(head.headers.map { "\($0.name):\($0.value)" });"
            case .body(let range):
                guard inMessage, range.lowerBound >= 0, range.upperBound <= pending.count, range.upperBound == consumed
                else { fatalError("a body range outside what was given") }
                bodyLength += UInt64(range.count)
                body += pending[range]  // written at the end: the pieces depend on the reads, the body not
            case .end:
                guard inMessage else { fatalError("an end without a head") }
                if let expected, expected != bodyLength { fatalError("a length body of another length") }
                inMessage = false
                out += "body \(body.map { String($0) }.joined(separator: ",")); end;"
                body = []
            case .tunnel:
                return out + "tunnel"
            case .violation(let violation):
                if case .framing = violation {
                    return out + "refused \(violation)"
                }
                return out + "own: \(violation)"
            }
            pending.removeFirst(consumed)
            if case .needMore = event { break }
        }
        if offset == bytes.count { return out }
    }
}
