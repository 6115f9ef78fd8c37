import CloakCore
import Foundation

/// A `file` field of a ``CloakCollect`` form (issue 47): the files a user picked, held until a
/// submission sends them to Cloak. A picker (`CloakFilePicker` in CloakCollectUI, or one of the
/// app's own) hands each file to ``add(data:fileName:mediaType:)``; the field's state is judged
/// on the device by the server's own rules (CloakCore's ``FileFieldState`` under the field's
/// ``FileRules`` from the served schema), so it is the state the server computes for the same
/// files.
///
/// There is no accessor of a file's bytes: a submission sends them to Cloak, nowhere else.
/// `description`, `debugDescription` and `Mirror` show the field's name and how many files it
/// holds, never a byte or a file name.
public final class CloakFileField: @unchecked Sendable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    public let name: String
    public let configuration: CloakFileFieldConfiguration
    /// The form's collector; the field does nothing once it is gone.
    private weak var collect: CloakCollect?
    let index: Int

    init(name: String, index: Int, configuration: CloakFileFieldConfiguration, collect: CloakCollect) {
        self.name = name
        self.index = index
        self.configuration = configuration
        self.collect = collect
    }

    /// Adds a file: its content, its name, and the media type the picker declared (a hint only:
    /// Cloak judges the content by its first bytes). Too many files, a file too large or of a
    /// type the field does not allow are added all the same; ``state`` says what is wrong, as the
    /// server would.
    public func add(data: Data, fileName: String, mediaType: String?) {
        // Inspected here, outside the collector's lock: the size, the first and the last bytes.
        var inspection = FileInspection()
        inspection.feed(data)
        let file = CloakFile(
            fileName: fileName, size: data.count, declaredMediaType: mediaType,
            mediaType: inspection.mediaType?.rawValue)
        let held = HeldFile(info: file, data: Sensitive(data), inspection: inspection)
        collect?.editFiles(index) { $0.append(held) }
    }

    /// Removes the file at `position` of ``files`` (nothing for a position it does not have).
    public func remove(at position: Int) {
        collect?.editFiles(index) { files in
            if files.indices.contains(position) { files.remove(at: position) }
        }
    }

    /// Removes every file.
    public func clear() { collect?.editFiles(index) { $0.removeAll() } }

    /// The files, in the order they were added: names, sizes and types, never the bytes.
    public var files: [CloakFile] { collect?.readFiles(index) { $0.map(\.info) } ?? [] }

    public var state: CloakFileFieldState { collect?.fileState(of: index) ?? CloakFileFieldState() }

    /// Called after every change of the field's files (an add, a removal, a clear), on the thread
    /// that made the change.
    public var onChange: (@Sendable (CloakFileField) -> Void)? {
        get { collect?.fileObserver(of: index) }
        set { collect?.setFileObserver(newValue, of: index) }
    }

    public var description: String { "CloakFileField(\(name), file)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["name": name, "type": "file"]) }
}

/// How a file field presents itself and what it accepts, from the served schema: what a picker
/// offers (``allowedMediaTypes``) and how many files it lets the user pick.
public struct CloakFileFieldConfiguration: Sendable, Equatable {
    public let name: String
    /// What a screen reader announces ("Document").
    public let title: String
    /// The media types a file's content may have (`image/jpeg`, `application/pdf`, …).
    public let allowedMediaTypes: [String]
    /// The most bytes one file may have.
    public let maxBytes: Int
    /// The most files the field may hold.
    public let maxFiles: Int
    /// A submission without a file is refused.
    public let isRequired: Bool
}

/// One file a ``CloakFileField`` holds, as an app may list it. The bytes stay in the field.
/// `description`, `debugDescription` and `Mirror` show the size and the media types only: a
/// file's name may name its owner (`passport-jane-doe.pdf`), so it is read on purpose
/// (``fileName``), never printed by accident.
public struct CloakFile: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    public let fileName: String
    /// Bytes.
    public let size: Int
    /// The media type the picker declared (a hint only: sent as the part's `Content-Type`).
    public let declaredMediaType: String?
    /// The media type of the content, from its first bytes (nil: none Cloak knows).
    public let mediaType: String?

    public var description: String { "CloakFile(\(size) bytes, \(mediaType ?? "unknown type"))" }
    public var debugDescription: String { description }
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "size": size, "declaredMediaType": declaredMediaType ?? "none", "mediaType": mediaType ?? "unknown",
            ])
    }
}

/// A file field's state: exactly the members of a file field's state as the server, Cloak
/// Elements' frame and CloakCollect compute it (`FileFieldState`): for the same files, member by
/// member the same values.
public struct CloakFileFieldState: Sendable, Equatable, Codable {
    public var isValid: Bool
    /// No file.
    public var isEmpty: Bool
    /// `FILE_EMPTY_VALIDATION_ERROR`, `FILE_SIZE_VALIDATION_ERROR`, `FILE_TYPE_VALIDATION_ERROR`,
    /// `FILE_EXECUTABLE_VALIDATION_ERROR`, `FILE_POLYGLOT_VALIDATION_ERROR` (each file's, once
    /// each, in file order), then `FILE_COUNT_VALIDATION_ERROR` or `FILE_REQUIRED_VALIDATION_ERROR`.
    public var validationErrors: [String]
    public var fileCount: Int
    /// The files' bytes, all together.
    public var bytes: Int
    /// The first file's media type, from its content (`image/png`); nil without one Cloak knows.
    public var mediaType: String?

    public init(
        isValid: Bool = false, isEmpty: Bool = true, validationErrors: [String] = [], fileCount: Int = 0,
        bytes: Int = 0, mediaType: String? = nil
    ) {
        self.isValid = isValid
        self.isEmpty = isEmpty
        self.validationErrors = validationErrors
        self.fileCount = fileCount
        self.bytes = bytes
        self.mediaType = mediaType
    }

    init(_ state: FileFieldState) {
        self.init(
            isValid: state.isValid, isEmpty: state.isEmpty, validationErrors: state.validationErrors,
            fileCount: state.fileCount, bytes: state.bytes, mediaType: state.mediaType?.rawValue)
    }
}

/// A file as a field holds it: what may be shown, the bytes (never printed), and what the rules
/// read (size, first and last bytes).
struct HeldFile: Sendable {
    let info: CloakFile
    let data: Sensitive<Data>
    let inspection: FileInspection
}
