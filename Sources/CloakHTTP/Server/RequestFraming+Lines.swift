extension RequestFraming {
    // MARK: Lines (head and trailer)

    /// Consumes line bytes from `start` until the bytes end or the stage is no longer a line
    /// stage; returns where it stopped.
    mutating func consumeLines(_ bytes: UnsafeRawBufferPointer, from start: Int) -> Int {
        var i = start
        let n = bytes.count
        while i < n {
            if pendingCR {
                guard bytes[i] == Byte.lf else {
                    stage = .violated(.bareCarriageReturn)
                    return n
                }
                pendingCR = false
                i += 1
                endLine()
                guard stage == .head || stage == .trailer else { return i }
                continue
            }
            let control = Self.firstControlByte(bytes, from: i)
            if control > i { appendToLine(bytes, i..<control) }
            guard control < n else { return n }
            switch bytes[control] {
            case Byte.cr:
                pendingCR = true
            case Byte.htab:
                appendToLine(bytes, control..<(control + 1))
            case Byte.lf:
                stage = .violated(.bareLineFeed)
                return n
            default:
                stage = .violated(.controlCharacter)
                return n
            }
            i = control + 1
        }
        return i
    }

    private mutating func appendToLine(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) {
        lineLength += range.count
        line.append(bytes, range)
        if !sawRequestLine {
            for k in max(range.lowerBound, range.upperBound - 8)..<range.upperBound {
                lineTail = lineTail << 8 | UInt64(bytes[k])
            }
        }
    }

    mutating func resetLine() {
        line.removeAll()
        lineLength = 0
        lineTail = 0
    }

    /// A line ended with CRLF.
    private mutating func endLine() {
        defer { resetLine() }
        if stage == .trailer {
            if lineLength == 0 {
                finishRequest()
            } else {
                inspectFieldLine(inTrailer: true)
            }
        } else if !sawRequestLine {
            // Empty lines before a request line are skipped.
            guard lineLength > 0 else { return }
            sawRequestLine = true
            method = methodKind()
            if method == .connect, let refusal = connectRefusal() {
                stage = .violated(refusal)
                return
            }
            // "HTTP/1.1" as the request line's last eight bytes.
            isHTTP11 = lineLength >= 8 && lineTail == 0x4854_5450_2F31_2E31
        } else if lineLength == 0 {
            endHead()
        } else {
            inspectFieldLine(inTrailer: false)
        }
    }

    /// Why the CONNECT request line in `line` is refused, or nil: on a listener without tunnels
    /// any CONNECT; elsewhere one whose target is not `host:port` or `[v6]:port` (evhttp answers
    /// such a one 400 itself, keeps the connection, and reads the rest of the head as requests).
    /// A target longer than the bytes kept is left to evhttp.
    private func connectRefusal() -> Violation? {
        if afterConnect == .refuse { return .connectNotServed }
        let start = 8  // "CONNECT "
        var end = start
        while end < line.count, line[end] != Byte.space { end += 1 }
        guard end < line.count else { return nil }
        var colon = end - 1
        while colon >= start, line[colon] != UInt8(ascii: ":") { colon -= 1 }
        let portDigits = end - colon - 1
        guard colon > start, (1...5).contains(portDigits) else { return .invalidConnectTarget }
        var port = 0
        for k in (colon + 1)..<end {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(line[k]) else { return .invalidConnectTarget }
            port = port * 10 + Int(line[k] - UInt8(ascii: "0"))
        }
        guard port <= 65_535 else { return .invalidConnectTarget }
        if line[start] == UInt8(ascii: "[") {
            guard line[colon - 1] == UInt8(ascii: "]"), colon - 1 > start + 1 else { return .invalidConnectTarget }
            for k in (start + 1)..<(colon - 1) where !Self.isIPv6Byte(line[k]) { return .invalidConnectTarget }
        } else {
            for k in start..<colon where !Self.isHostByte(line[k]) { return .invalidConnectTarget }
        }
        return nil
    }

    private static func isHostByte(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"):
            return true
        default: return false
        }
    }

    private static func isIPv6Byte(_ b: UInt8) -> Bool {
        HTTPSyntax.hexValue(b) != nil || b == UInt8(ascii: ":") || b == UInt8(ascii: ".")
    }

    /// The method of the request line in `line`, as evhttp 2.1.12 reads it (case sensitive).
    private func methodKind() -> MethodKind {
        var length = 0
        while length < line.count, line[length] != Byte.space { length += 1 }
        guard length < line.count else { return .ignoresBody }  // no space in the bytes kept
        switch length {
        case 3: return line.hasPrefix("GET") || line.hasPrefix("PUT") ? .readsBody : .ignoresBody
        case 4: return line.hasPrefix("POST") ? .readsBody : .ignoresBody
        case 5: return line.hasPrefix("PATCH") ? .readsBody : .ignoresBody
        case 6: return line.hasPrefix("DELETE") ? .readsBody : .ignoresBody
        case 7:
            if line.hasPrefix("OPTIONS") { return .readsBody }
            return line.hasPrefix("CONNECT") ? .connect : .ignoresBody
        default: return .ignoresBody
        }
    }
}
