extension RequestFraming {
    /// A header or trailer line, in `line` (its first bytes when longer).
    mutating func inspectFieldLine(inTrailer: Bool) {
        let kept = line.count
        let isWhole = lineLength == kept
        if line[0] == Byte.space || line[0] == Byte.htab {
            stage = .violated(.obsoleteLineFolding)
            return
        }
        var colon = 0
        while colon < kept, line[colon] != Byte.colon { colon += 1 }
        guard colon < kept else {
            // A longer line has a longer name than the two looked for (the parser's name check
            // applies to it in a head; a trailer's name is checked only here, so one too long
            // to check is refused).
            if isWhole || inTrailer { stage = .violated(.malformedFieldLine) }
            return
        }
        guard colon > 0 else {
            stage = .violated(.malformedFieldLine)
            return
        }
        if line[colon - 1] == Byte.space || line[colon - 1] == Byte.htab {
            stage = .violated(.whitespaceBeforeColon)
            return
        }
        // A trailer is not parsed further: its name is held to the head's rule here (a token).
        if inTrailer, (0..<colon).contains(where: { !HTTPSyntax.isTokenByte(line[$0]) }) {
            stage = .violated(.invalidTrailerFieldName)
            return
        }
        let isLength = colon == 14 && line.hasLowercasedPrefix("content-length")
        let isEncoding = colon == 17 && line.hasLowercasedPrefix("transfer-encoding")
        guard isLength || isEncoding else { return }
        if inTrailer {
            stage = .violated(.framingFieldInTrailer)
        } else if !isWhole {
            stage = .violated(.framingFieldTooLong)
        } else if isLength {
            readContentLength(from: colon + 1)
        } else {
            readTransferEncoding(from: colon + 1)
        }
    }

    private mutating func readContentLength(from start: Int) {
        var lower = start
        var upper = line.count
        while lower < upper, line[lower] == Byte.space || line[lower] == Byte.htab { lower += 1 }
        while upper > lower, line[upper - 1] == Byte.space || line[upper - 1] == Byte.htab { upper -= 1 }
        let digits = upper - lower
        guard (1...18).contains(digits) else {
            stage = .violated(.invalidContentLength)
            return
        }
        var value: UInt64 = 0
        for k in lower..<upper {
            let byte = line[k]
            guard byte >= Byte.zero, byte <= Byte.nine else {
                stage = .violated(.invalidContentLength)
                return
            }
            value = value * 10 + UInt64(byte - Byte.zero)
        }
        if let contentLength, contentLength != value || contentLengthDigits != digits {
            stage = .violated(.conflictingContentLength)
        } else if chunked {
            stage = .violated(.transferEncodingWithContentLength)
        } else {
            contentLength = value
            contentLengthDigits = digits
        }
    }

    private mutating func readTransferEncoding(from start: Int) {
        guard !chunked else {
            stage = .violated(.repeatedTransferEncoding)
            return
        }
        // Trimmed as lenient readers trim (leading SP, trailing SP and HTAB): a leading HTAB
        // stays and makes the value something else than `chunked`, refused.
        var lower = start
        var upper = line.count
        while lower < upper, line[lower] == Byte.space { lower += 1 }
        while upper > lower, line[upper - 1] == Byte.space || line[upper - 1] == Byte.htab { upper -= 1 }
        if upper - lower != 7 || !line.hasLowercasedPrefix("chunked", at: lower) {
            stage = .violated(.unsupportedTransferEncoding)
        } else if contentLength != nil {
            stage = .violated(.transferEncodingWithContentLength)
        } else if !isHTTP11 {
            stage = .violated(.transferEncodingBeforeHTTP11)
        } else {
            chunked = true
        }
    }
}
