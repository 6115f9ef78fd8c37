/// The media types a `file` field may allow, each recognised from its content's first bytes
/// (the type a client declares is only a hint: ``FileInspection/mediaType``). Pure: the same on the server, in Cloak Elements
/// (mirrored in its frame) and in CloakCollect.
public enum FileMediaType: String, Sendable, CaseIterable, Codable {
    case jpeg = "image/jpeg"
    case png = "image/png"
    case gif = "image/gif"
    case webp = "image/webp"
    case heic = "image/heic"
    case tiff = "image/tiff"
    case pdf = "application/pdf"
}

/// Magic bytes: media types, and the executables and archives a document upload never is.
public enum FileSniffer {
    /// Bytes looked at from a file's start (a PDF's header may sit anywhere in its first 1 KiB,
    /// and a second format's signature there makes a polyglot).
    public static let prefixLength = 1024
    /// Bytes looked at from a file's end (an archive's end of central directory, with the
    /// longest comment a ZIP may carry, is within them).
    public static let tailLength = 22 + 65_535

    public enum Verdict: Sendable, Equatable {
        case media(FileMediaType)
        /// An executable, script or archive (named, for the error): refused whatever is allowed.
        case executable(String)
        case unknown
    }

    static func verdict(_ b: [UInt8]) -> Verdict {
        func starts(_ signature: [UInt8], at offset: Int = 0) -> Bool {
            b.count >= offset + signature.count && b[offset..<(offset + signature.count)].elementsEqual(signature)
        }
        // Executables, scripts and archives first: a file that starts as one is never a document.
        if starts([0x7F, 0x45, 0x4C, 0x46]) { return .executable("ELF") }
        if starts([0x4D, 0x5A]) { return .executable("PE") }
        for magic: [UInt8] in [
            [0xFE, 0xED, 0xFA, 0xCE], [0xFE, 0xED, 0xFA, 0xCF], [0xCE, 0xFA, 0xED, 0xFE], [0xCF, 0xFA, 0xED, 0xFE],
            [0xCA, 0xFE, 0xBA, 0xBE],
        ] where starts(magic) {
            return .executable("Mach-O or Java class")
        }
        if starts(Array("#!".utf8)) { return .executable("script") }
        if starts([0x50, 0x4B, 0x03, 0x04]) || starts([0x50, 0x4B, 0x05, 0x06]) { return .executable("ZIP archive") }
        if starts([0x1F, 0x8B]) { return .executable("gzip archive") }
        if starts(Array("Rar!".utf8)) || starts([0x37, 0x7A, 0xBC, 0xAF, 0x27, 0x1C]) { return .executable("archive") }
        if starts([0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1]) { return .executable("OLE document") }
        // Media types.
        if starts([0xFF, 0xD8, 0xFF]) { return .media(.jpeg) }
        if starts([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .media(.png) }
        if starts(Array("GIF87a".utf8)) || starts(Array("GIF89a".utf8)) { return .media(.gif) }
        if starts(Array("RIFF".utf8)) && starts(Array("WEBP".utf8), at: 8) { return .media(.webp) }
        if starts(Array("ftyp".utf8), at: 4),
            ["heic", "heix", "heim", "heis", "mif1", "msf1"].contains(where: { starts(Array($0.utf8), at: 8) })
        {
            return .media(.heic)
        }
        if starts([0x49, 0x49, 0x2A, 0x00]) || starts([0x4D, 0x4D, 0x00, 0x2A]) { return .media(.tiff) }
        if starts(Array("%PDF-".utf8)) { return .media(.pdf) }
        return .unknown
    }

    /// Whether `prefix` (a file's first bytes) or `tail` (its last) hold a second format's
    /// signature: a PDF header in the first 1 KiB of what is not a PDF (readers look there), an
    /// archive's end of central directory or local file header in the tail (a JPEG that is also
    /// a ZIP), or an executable's header anywhere past the start (found as the whole file
    /// streams: ``FileInspection/hasExecutablePastStart``).
    static func isPolyglot(
        prefix: [UInt8], tailHasArchive: Bool, executablePastStart: Bool, as type: FileMediaType
    ) -> Bool {
        if type != .pdf && contains(prefix, Array("%PDF-".utf8)) { return true }
        return tailHasArchive || executablePastStart
    }

    /// Whether a file's last bytes hold a ZIP end of central directory or local file header.
    static func hasArchiveSignature(_ tail: some Collection<UInt8>) -> Bool {
        contains(tail, [0x50, 0x4B, 0x05, 0x06]) || contains(tail, [0x50, 0x4B, 0x03, 0x04])
    }

    private static func contains(_ bytes: some Collection<UInt8>, _ signature: [UInt8]) -> Bool {
        let b = Array(bytes)
        guard b.count >= signature.count else { return false }
        for start in 0...(b.count - signature.count) where b[start] == signature[0] {
            if b[start..<(start + signature.count)].elementsEqual(signature) { return true }
        }
        return false
    }
}
