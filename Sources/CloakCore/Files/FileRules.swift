/// The rules of a `file` field (issue 47): how large each file may be, which media types its
/// content may have, how many files, and whether one is required. The server, Cloak Elements'
/// frame and CloakCollect judge files by them the same way (``FileFieldState``).
public struct FileRules: Sendable, Equatable {
    /// The most bytes one file may have (default 10 MiB).
    public var maxBytes: Int
    /// The media types a file's content may have (default: every ``FileMediaType``).
    public var types: [FileMediaType]
    /// The most files the field may hold (default 1).
    public var maxFiles: Int
    public var isRequired: Bool

    public static let defaultMaxBytes = 10 << 20
    /// No field may allow more than this per file.
    public static let largestMaxBytes = 64 << 20
    /// No field may allow more files than this.
    public static let largestMaxFiles = 20

    public init(
        maxBytes: Int = defaultMaxBytes, types: [FileMediaType] = FileMediaType.allCases, maxFiles: Int = 1,
        isRequired: Bool = false
    ) {
        self.maxBytes = maxBytes
        self.types = types
        self.maxFiles = maxFiles
        self.isRequired = isRequired
    }
}

/// Why a file or a file field is refused: the `validationErrors` strings of a file field.
public enum FileValidationError {
    public static let empty = "FILE_EMPTY_VALIDATION_ERROR"
    public static let tooLarge = "FILE_SIZE_VALIDATION_ERROR"
    public static let typeNotAllowed = "FILE_TYPE_VALIDATION_ERROR"
    public static let executable = "FILE_EXECUTABLE_VALIDATION_ERROR"
    public static let polyglot = "FILE_POLYGLOT_VALIDATION_ERROR"
    public static let tooManyFiles = "FILE_COUNT_VALIDATION_ERROR"
    public static let required = "FILE_REQUIRED_VALIDATION_ERROR"
}

/// One file read as it arrives: its size, and its first and last bytes (for the media type and
/// the polyglot check), never the whole of it. Feed it the file's bytes in order, then ask for
/// its ``verdict(_:)``.
public struct FileInspection: Sendable {
    public private(set) var bytes = 0
    private var prefix: [UInt8] = []
    /// At least the last ``FileSniffer/tailLength`` bytes (up to twice as many: trimmed in bulk).
    private var tail: [UInt8] = []
    /// Set by ``finished()``: whether the tail held an archive's signature (the tail is gone).
    private var tailHasArchive: Bool?
    /// Whether an ELF identification (``elfIdentLength`` bytes) was found anywhere past the
    /// file's first byte (the whole file is scanned as it streams: a document carrying an
    /// executable is a polyglot).
    public private(set) var hasExecutablePastStart = false
    /// The last bytes fed (up to 6), so an identification split between two pieces is found.
    private var carry: [UInt8] = []
    public init() {}

    /// The file ended: the same inspection without the tail it kept (its one finding kept),
    /// for a server holding several files' inspections until their submission ends.
    public func finished() -> FileInspection {
        var copy = self
        copy.tailHasArchive = tailHasArchive ?? FileSniffer.hasArchiveSignature(tail.suffix(FileSniffer.tailLength))
        copy.tail = []
        return copy
    }

    public mutating func feed(_ chunk: some Collection<UInt8>) {
        // On the chunk's own storage: through the generic parameter, `carry + chunk.suffix(6)`
        // chose `Sequence.suffix`, a walk of every byte through witness calls (4x an upload's
        // instructions under callgrind, Benchmarks/README.md "issue 74 part 4").
        let fed: Void? = chunk.withContiguousStorageIfAvailable { feed(buffer: $0) }
        if fed == nil { Array(chunk).withUnsafeBufferPointer { feed(buffer: $0) } }
    }

    private mutating func feed(buffer chunk: UnsafeBufferPointer<UInt8>) {
        precondition(tailHasArchive == nil, "bytes after a file's end")
        bytes += chunk.count
        if prefix.count < FileSniffer.prefixLength {
            prefix += chunk.prefix(FileSniffer.prefixLength - prefix.count)
        }
        tail.append(contentsOf: chunk.suffix(FileSniffer.tailLength))
        if tail.count > 2 * FileSniffer.tailLength { tail.removeFirst(tail.count - FileSniffer.tailLength) }
        if !hasExecutablePastStart { scanForExecutable(chunk) }
    }

    /// Looks for an ELF identification in `carry + chunk`, past the file's first byte.
    private mutating func scanForExecutable(_ chunk: UnsafeBufferPointer<UInt8>) {
        // The window's first byte is at file offset `bytes - chunk.count - carry.count`.
        let skipping = bytes - chunk.count - carry.count == 0 ? 1 : 0
        hasExecutablePastStart = Self.findELF(in: carry, chunk, skipping: skipping)
        let keep = Self.elfIdentLength - 1
        carry.append(contentsOf: chunk.suffix(keep))
        if carry.count > keep { carry.removeFirst(carry.count - keep) }
    }

    /// What every ELF loader reads first: `7F 45 4C 46`, a class (1: 32-bit, 2: 64-bit), a byte
    /// order (1, 2) and version 1. The four magic bytes alone turn up by chance in compressed
    /// data (about one 5 MiB photo in 800); with these three they do about once in 2^54 places.
    static let elfIdentLength = 7

    /// Whether an ELF identification starts at any position of `head + body` from `skipping` on.
    private static func findELF(in head: [UInt8], _ body: UnsafeBufferPointer<UInt8>, skipping: Int) -> Bool {
        let count = head.count + body.count
        func at(_ i: Int) -> UInt8 { i < head.count ? head[i] : body[i - head.count] }
        var i = skipping
        while i + elfIdentLength <= count {
            if i >= head.count {
                // The rest lies in `body`: on to its next 0x7F.
                guard let hit = body[(i - head.count)...].firstIndex(of: 0x7F) else { return false }
                i = head.count + hit
                if i + elfIdentLength > count { return false }
            }
            if at(i) == 0x7F && at(i + 1) == 0x45 && at(i + 2) == 0x4C && at(i + 3) == 0x46
                && (1...2).contains(at(i + 4)) && (1...2).contains(at(i + 5)) && at(i + 6) == 1
            {
                return true
            }
            i += 1
        }
        return false
    }

    /// What is already certain to be wrong with the file under `rules` from the bytes fed so
    /// far, before it ends: too large; once its first KiB is in, an executable, an unknown type,
    /// a type the field does not allow or a PDF header in a non-PDF; an executable's header
    /// anywhere past its start. A server refuses on these before storing anything of it.
    public func refusalSoFar(_ rules: FileRules) -> [String] {
        if prefix.count >= FileSniffer.prefixLength {
            return errors(rules, tailHasArchive: false)
        }
        var errors: [String] = []
        if bytes > rules.maxBytes { errors.append(FileValidationError.tooLarge) }
        if hasExecutablePastStart { errors.append(FileValidationError.polyglot) }
        return errors
    }

    /// What the content was found to be, for refusals: its media type, `executable`, `unknown`
    /// (no type Cloak knows), or nil before any byte.
    public var detectedType: String? {
        guard bytes > 0 else { return nil }
        switch FileSniffer.verdict(prefix) {
        case .executable: return "executable"
        case .unknown: return "unknown"
        case .media(let type): return type.rawValue
        }
    }

    /// The media type the content has.
    public var mediaType: FileMediaType? {
        if case .media(let type) = FileSniffer.verdict(prefix) { return type }
        return nil
    }

    /// What is wrong with the file under `rules` (empty: nothing).
    public func verdict(_ rules: FileRules) -> [String] {
        if bytes == 0 { return [FileValidationError.empty] }
        return errors(
            rules,
            tailHasArchive: tailHasArchive ?? FileSniffer.hasArchiveSignature(tail.suffix(FileSniffer.tailLength)))
    }

    /// Size, type and polyglot errors, the tail's finding given.
    private func errors(_ rules: FileRules, tailHasArchive: Bool) -> [String] {
        var errors: [String] = []
        if bytes > rules.maxBytes { errors.append(FileValidationError.tooLarge) }
        switch FileSniffer.verdict(prefix) {
        case .executable:
            errors.append(FileValidationError.executable)
        case .unknown:
            errors.append(FileValidationError.typeNotAllowed)
        case .media(let type):
            if !rules.types.contains(type) { errors.append(FileValidationError.typeNotAllowed) }
            if FileSniffer.isPolyglot(
                prefix: prefix, tailHasArchive: tailHasArchive, executablePastStart: hasExecutablePastStart, as: type)
            {
                errors.append(FileValidationError.polyglot)
            }
        }
        return errors
    }
}

extension FileRules {
    /// A refusal's facts (`extraInfo.fileLimits.<field>`): the field's limits, and what the
    /// refused files were found to be, so a client can say "over 10 MiB" or "a GIF, not a JPEG".
    public func refusalFacts(detected: [String]) -> JSONValue {
        .object([
            ("maxBytes", .int(maxBytes)), ("maxFiles", .int(maxFiles)),
            ("allowedTypes", .array(types.map { .string($0.rawValue) })),
            ("detectedTypes", .array(detected.map { .string($0) })),
        ])
    }
}

/// A file field's state, as the SDK's field state plus `fileCount`, `bytes` and `mediaType`
/// (the first file's), computed by the same rules wherever it is shown.
public struct FileFieldState: Sendable, Equatable {
    public var isValid: Bool { validationErrors.isEmpty }
    public var isEmpty: Bool { fileCount == 0 }
    public var validationErrors: [String]
    public var fileCount: Int
    public var bytes: Int
    public var mediaType: FileMediaType?
    /// What each refused file was found to be (``FileInspection/detectedType``), each once.
    public var refusedTypes: [String] = []

    /// The state of a field holding `files` under `rules`: each file's errors (once each), then
    /// the field's own (too many files, or none when required).
    public init(files: [FileInspection], rules: FileRules) {
        var errors: [String] = []
        for file in files {
            let verdict = file.verdict(rules)
            for error in verdict where !errors.contains(error) { errors.append(error) }
            if !verdict.isEmpty, let type = file.detectedType, !refusedTypes.contains(type) {
                refusedTypes.append(type)
            }
        }
        if files.count > rules.maxFiles { errors.append(FileValidationError.tooManyFiles) }
        if files.isEmpty && rules.isRequired { errors.append(FileValidationError.required) }
        validationErrors = errors
        fileCount = files.count
        bytes = files.reduce(0) { $0 + $1.bytes }
        mediaType = files.first?.mediaType
    }

    /// As JSON, for the SDK's state objects: `isValid`, `isEmpty`, `validationErrors`,
    /// `fileCount`, `bytes`, `mediaType`.
    public var json: JSONValue {
        .object([
            ("isValid", .bool(isValid)), ("isEmpty", .bool(isEmpty)),
            ("validationErrors", .array(validationErrors.map { .string($0) })),
            ("fileCount", .int(fileCount)), ("bytes", .int(bytes)),
            ("mediaType", mediaType.map { .string($0.rawValue) } ?? .null),
        ])
    }
}
