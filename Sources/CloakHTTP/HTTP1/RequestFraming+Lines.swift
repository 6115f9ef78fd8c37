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
        let before = lineLength
        lineLength += range.count
        line.append(bytes, range)
        if !sawRequestLine, lineLength > LineBuffer.capacity, line.hasPrefix("CONNECT ") {
            // Past the inline buffer: a CONNECT line is kept whole (up to its limit).
            let start = range.lowerBound + max(0, LineBuffer.capacity - before)
            let room = Self.connectLineLimit - LineBuffer.capacity - connectOverflow.count
            if start < range.upperBound, room > 0 {
                connectOverflow.append(contentsOf: bytes[start..<min(range.upperBound, start + room)])
            }
        }
        if !sawRequestLine {
            for k in max(range.lowerBound, range.upperBound - 8)..<range.upperBound {
                lineTail = lineTail << 8 | UInt64(bytes[k])
            }
        }
    }

    mutating func resetLine() {
        line.removeAll()
        if !connectOverflow.isEmpty { connectOverflow.removeAll() }
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
            // "HTTP/1.1" (or a later minor version, served as 1.1) as the line's last eight bytes.
            let minor = UInt8(truncatingIfNeeded: lineTail)
            isHTTP11 =
                lineLength >= 8 && lineTail >> 8 == 0x48_5454_502F_312E && minor >= UInt8(ascii: "1")
                && minor <= UInt8(ascii: "9")
        } else if lineLength == 0 {
            endHead()
        } else {
            inspectFieldLine(inTrailer: false)
        }
    }

    /// Why the CONNECT request line is refused, or nil: on a listener without tunnels any
    /// CONNECT; elsewhere one that is not exactly `CONNECT host:port HTTP/1.x` (or `[v6]:port`).
    /// A lenient server (evhttp was one) takes the target up to the line's last space, so one
    /// space more, or a word between target and version, is refused here.
    private func connectRefusal() -> BrokenRule? {
        if afterConnect == .refuse { return .connectNotServed }
        guard lineLength <= Self.connectLineLimit else { return .invalidConnectTarget }
        var text: [UInt8] = []
        text.reserveCapacity(lineLength)
        for k in 0..<line.count { text.append(line[k]) }
        text += connectOverflow
        let parts = text.split(separator: Byte.space, omittingEmptySubsequences: false)
        guard parts.count == 3, parts[2].count == 8, parts[2].starts(with: "HTTP/1.".utf8),
            let minor = parts[2].last, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(minor)
        else { return .invalidConnectTarget }
        return Self.isAuthority(Array(parts[1])) ? nil : .invalidConnectTarget
    }

    /// `host:port` (name or IPv4 bytes) or `[v6]:port`, a port of 1 to 5 digits up to 65535.
    private static func isAuthority(_ target: [UInt8]) -> Bool {
        guard let colon = target.lastIndex(of: UInt8(ascii: ":")), colon > 0 else { return false }
        let port = target[(colon + 1)...]
        guard (1...5).contains(port.count), port.allSatisfy({ (48...57).contains($0) }),
            port.reduce(0, { $0 * 10 + Int($1 - 48) }) <= 65_535
        else { return false }
        let host = target[..<colon]
        if host.first == UInt8(ascii: "[") {
            guard host.count > 2, host.last == UInt8(ascii: "]") else { return false }
            return host.dropFirst().dropLast().allSatisfy(isIPv6Byte)
        }
        return host.allSatisfy(isHostByte)
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

    /// The method of the request line in `line` (case sensitive), as far as framing goes.
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
