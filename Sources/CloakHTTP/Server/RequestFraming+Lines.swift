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
            // "HTTP/1.1" as the request line's last eight bytes.
            isHTTP11 = lineLength >= 8 && lineTail == 0x4854_5450_2F31_2E31
        } else if lineLength == 0 {
            endHead()
        } else {
            inspectFieldLine(inTrailer: false)
        }
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
