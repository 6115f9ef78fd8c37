import Testing

@testable import CloakCore

/// File fields' rules (issue 47): the media type from magic bytes, never the declared one;
/// executables, archives, polyglots, empty and oversized files refused; counts and `required`.
@Suite struct FileRulesTests {
    static func file(_ bytes: [UInt8], in pieces: Int = 1) -> FileInspection {
        var inspection = FileInspection()
        let size = max(1, (bytes.count + pieces - 1) / max(pieces, 1))
        var offset = 0
        while offset < bytes.count {
            inspection.feed(bytes[offset..<min(offset + size, bytes.count)])
            offset += size
        }
        return inspection
    }

    static let jpeg: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0] + Array("JFIF".utf8) + [UInt8](repeating: 0x20, count: 2000)
    static let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + [UInt8](repeating: 1, count: 100)
    static let pdf: [UInt8] = Array("%PDF-1.7\n".utf8) + [UInt8](repeating: 0x41, count: 3000)
    static let webp: [UInt8] =
        Array("RIFF".utf8) + [0, 0, 0, 0] + Array("WEBPVP8 ".utf8) + [UInt8](repeating: 2, count: 50)
    static let heic: [UInt8] = [0, 0, 0, 24] + Array("ftypheic".utf8) + [UInt8](repeating: 3, count: 50)

    @Test(arguments: [
        (jpeg, FileMediaType.jpeg), (png, .png), (pdf, .pdf), (webp, .webp), (heic, .heic),
        (Array("GIF89a".utf8) + [1, 2, 3], .gif), ([0x49, 0x49, 0x2A, 0x00, 8, 0, 0, 0], .tiff),
    ])
    func mediaTypesComeFromTheContent(bytes: [UInt8], type: FileMediaType) {
        let file = Self.file(bytes, in: 3)
        #expect(file.mediaType == type)
        #expect(file.verdict(FileRules()) == [])
        #expect(
            file.verdict(FileRules(types: FileMediaType.allCases.filter { $0 != type })) == [
                FileValidationError.typeNotAllowed
            ])
    }

    @Test(
        arguments: [
            ([0x7F, 0x45, 0x4C, 0x46, 2, 1, 1, 0], "ELF"), ([0x4D, 0x5A, 0x90, 0], "PE"),
            ([0xCF, 0xFA, 0xED, 0xFE, 7, 0, 0, 1], "Mach-O"), (Array("#!/bin/sh\nrm -rf /\n".utf8), "script"),
            ([0x50, 0x4B, 0x03, 0x04, 20, 0], "ZIP"), ([0x1F, 0x8B, 8, 0], "gzip"),
            ([0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1], "OLE"),
        ] as [([UInt8], String)])
    func executablesAndArchivesAreRefused(bytes: [UInt8], name: String) {
        #expect(Self.file(bytes).verdict(FileRules()) == [FileValidationError.executable], "\(name)")
    }

    @Test func unknownEmptyAndOversizedFilesAreRefused() {
        #expect(Self.file(Array("just some text".utf8)).verdict(FileRules()) == [FileValidationError.typeNotAllowed])
        #expect(Self.file([]).verdict(FileRules()) == [FileValidationError.empty])
        #expect(Self.file(Self.jpeg).verdict(FileRules(maxBytes: 100)) == [FileValidationError.tooLarge])
        // The declared type plays no part: a PNG's bytes under a .jpg name are a PNG.
        #expect(Self.file(Self.png).verdict(FileRules(types: [.jpeg])) == [FileValidationError.typeNotAllowed])
    }

    @Test func polyglotsAreRefused() {
        // A JPEG that is also a ZIP (a JAR): its tail holds the archive's end of central directory.
        let jar =
            Self.jpeg + [0x50, 0x4B, 0x03, 0x04] + [UInt8](repeating: 9, count: 100) + [0x50, 0x4B, 0x05, 0x06]
            + [UInt8](repeating: 0, count: 18)
        #expect(Self.file(jar, in: 7).verdict(FileRules()) == [FileValidationError.polyglot])
        // A PNG with a PDF header in its first kilobyte (PDF readers look there).
        let pdfInPNG = Self.png + Array("%PDF-1.4".utf8)
        #expect(Self.file(pdfInPNG).verdict(FileRules()) == [FileValidationError.polyglot])
        // An archive far from the end is out of the tail the check keeps: a plain large JPEG is fine.
        let large = Self.jpeg + [UInt8](repeating: 0x55, count: 200_000)
        #expect(Self.file(large, in: 13).verdict(FileRules(maxBytes: 1 << 20)) == [])
    }

    @Test func theTailIsTheLastBytesHoweverTheyCame() {
        let content =
            Self.jpeg + [UInt8](repeating: 0x11, count: FileSniffer.tailLength) + [0x50, 0x4B, 0x05, 0x06, 0, 0]
        for pieces in [1, 2, 9, 1000] {
            #expect(
                Self.file(content, in: pieces).verdict(FileRules(maxBytes: 1 << 20)) == [FileValidationError.polyglot])
        }
    }

    /// Issue 55, item 11: an ELF header anywhere past the start, however the pieces split it;
    /// never the file's own first bytes (that is an executable, not a polyglot).
    @Test func anExecutablesHeaderAnywherePastTheStartIsFound() {
        let elf: [UInt8] = [0x7F, 0x45, 0x4C, 0x46, 2, 1, 1]
        for offset in [5, 1_023, 1_024, 5_008, 65_533, 150_000] {
            var content = Self.jpeg + [UInt8](repeating: 0x11, count: 160_000)
            content.replaceSubrange(offset..<(offset + elf.count), with: elf)
            for pieces in [1, 2, 7, 1000] {
                let file = Self.file(content, in: pieces)
                #expect(file.hasExecutablePastStart, "at \(offset) in \(pieces)")
                #expect(file.verdict(FileRules(maxBytes: 1 << 20)) == [FileValidationError.polyglot])
                #expect(file.refusalSoFar(FileRules(maxBytes: 1 << 20)) == [FileValidationError.polyglot])
            }
        }
        let plain = Self.file(Self.jpeg + [UInt8](repeating: 0x7F, count: 10_000), in: 3)
        #expect(!plain.hasExecutablePastStart)
        // The four magic bytes alone, as compressed data holds them by chance, are no ELF.
        for chance: [UInt8] in [[0x7F, 0x45, 0x4C, 0x46, 0, 0, 0], [0x7F, 0x45, 0x4C, 0x46, 2, 1, 9]] {
            let photo = Self.file(Self.jpeg + [UInt8](repeating: 0x33, count: 3_000) + chance + [1, 2, 3], in: 4)
            #expect(!photo.hasExecutablePastStart && photo.verdict(FileRules()) == [], "\(chance)")
        }
        #expect(
            Self.file(elf + [UInt8](repeating: 0, count: 64), in: 2).verdict(FileRules()) == [
                FileValidationError.executable
            ])
    }

    /// Issue 55, item 2: what the first KiB already settles, before the file ends.
    @Test func theFirstKiBSettlesTypeAndExecutables() {
        var inspection = FileInspection()
        inspection.feed([UInt8](repeating: UInt8(ascii: "a"), count: 1_023))
        #expect(inspection.refusalSoFar(FileRules()) == [])  // not yet a whole KiB
        inspection.feed([UInt8(ascii: "a")])
        #expect(inspection.refusalSoFar(FileRules()) == [FileValidationError.typeNotAllowed])
        var png = FileInspection()
        png.feed(Self.png + [UInt8](repeating: 0, count: 2_000))
        #expect(png.refusalSoFar(FileRules(types: [.jpeg])) == [FileValidationError.typeNotAllowed])
        #expect(png.refusalSoFar(FileRules(maxBytes: 100)) == [FileValidationError.tooLarge])
        #expect(png.refusalSoFar(FileRules()) == [])
    }

    @Test func aFieldsStateCountsItsFiles() {
        let rules = FileRules(maxFiles: 2, isRequired: true)
        let none = FileFieldState(files: [], rules: rules)
        #expect(none.isEmpty && !none.isValid && none.validationErrors == [FileValidationError.required])
        let two = FileFieldState(files: [Self.file(Self.jpeg), Self.file(Self.pdf)], rules: rules)
        #expect(two.isValid && two.fileCount == 2 && two.bytes == Self.jpeg.count + Self.pdf.count)
        #expect(two.mediaType == .jpeg)
        let three = FileFieldState(files: [Self.file(Self.jpeg), Self.file(Self.png), Self.file([])], rules: rules)
        #expect(three.validationErrors == [FileValidationError.empty, FileValidationError.tooManyFiles])
        guard case .object(let members) = two.json else {
            Issue.record("the state is not an object")
            return
        }
        #expect(members.map(\.key) == ["isValid", "isEmpty", "validationErrors", "fileCount", "bytes", "mediaType"])
    }
}
