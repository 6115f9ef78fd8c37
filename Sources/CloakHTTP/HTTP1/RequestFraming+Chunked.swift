extension RequestFraming {
    // MARK: Chunk size lines

    mutating func startChunkLine() {
        stage = .chunkSize
        chunkDigits = 0
        chunkSize = 0
        chunkLineLength = 0
        pendingCR = false
    }

    /// Consumes a chunk size line (short: byte by byte) up to its LF at most.
    mutating func consumeChunkLine(_ bytes: UnsafeRawBufferPointer, from start: Int) -> Int {
        var i = start
        while i < bytes.count {
            let byte = bytes[i]
            i += 1
            if pendingCR {
                guard byte == Byte.lf else {
                    stage = .violated(.bareCarriageReturn)
                    return bytes.count
                }
                pendingCR = false
                if chunkSize == 0 {
                    stage = .trailer
                    resetLine()
                } else {
                    stage = .chunkData(chunkSize)
                }
                return i
            }
            if byte == Byte.cr {
                guard chunkDigits > 0 else {
                    stage = .violated(.invalidChunkSize)
                    return bytes.count
                }
                pendingCR = true
                continue
            }
            if byte == Byte.lf {
                stage = .violated(.bareLineFeed)
                return bytes.count
            }
            chunkLineLength += 1
            guard chunkLineLength <= Self.chunkLineLimit else {
                stage = .violated(.chunkLineTooLong)
                return bytes.count
            }
            guard stage == .chunkSize else { continue }  // an extension: any other byte
            if let digit = HTTPSyntax.hexValue(byte), chunkDigits < 16 {
                chunkDigits += 1
                chunkSize = chunkSize << 4 | UInt64(digit)
            } else if byte == Byte.semicolon && chunkDigits > 0 {
                stage = .chunkExtension
            } else {
                stage = .violated(.invalidChunkSize)
                return bytes.count
            }
        }
        return i
    }

}
