#if canImport(UIKit) && !os(tvOS) && !os(watchOS)
    import UIKit
    import UniformTypeIdentifiers
    import CloakCollect
    #if canImport(PhotosUI)
        import PhotosUI
    #endif

    /// Lets the user pick files for one `CloakFileField`: documents (Files, iCloud Drive), photos
    /// from the library, or a photo taken with the camera.
    ///
    /// The picker reads each picked file and hands its bytes to
    /// `CloakFileField.add(data:fileName:mediaType:)`; it keeps none of them. The field judges
    /// the files by the server's rules (`CloakFileField.state`), and a submission sends them to
    /// Cloak. The document picker offers the types the field allows; a file larger than the
    /// field allows is not read (``CloakFilePickerError/tooLarge``).
    ///
    /// The picker is the system picker's delegate: keep a reference to it while it is shown.
    ///
    /// ```swift
    /// picker = CloakFilePicker(field: try collect.fileField("kyc.document"))
    /// picker.onFinish = { added, failures in … }
    /// picker.present(.documents, from: self)
    /// ```
    @MainActor
    public final class CloakFilePicker: NSObject {
        /// Where the files come from.
        public enum Source: Sendable, Equatable {
            /// `UIDocumentPickerViewController`, offering the field's allowed types.
            case documents
            /// `PHPickerViewController` (the photo library, without library access).
            case photoLibrary
            /// `UIImagePickerController` with the camera: one photo, as JPEG (PNG when only PNG is
            /// allowed).
            case camera
        }

        /// The field the picked files are added to.
        public let field: CloakFileField

        /// Called on the main queue when the user is done, after the picked files were added:
        /// how many were, and why the others were not (`CloakFilePickerError`, or a reading
        /// error). A cancelled picker reports `(0, [])`.
        public var onFinish: (@MainActor (_ added: Int, _ failures: [any Error]) -> Void)?

        public init(field: CloakFileField) {
            self.field = field
            super.init()
        }

        /// Whether `source` can be shown on this device (a simulator has no camera).
        public static func isAvailable(_ source: Source) -> Bool {
            switch source {
            case .documents:
                return true
            case .photoLibrary:
                #if canImport(PhotosUI)
                    return true
                #else
                    return false
                #endif
            case .camera:
                return UIImagePickerController.isSourceTypeAvailable(.camera)
            }
        }

        /// Presents the system picker for `source` from `presenter`.
        public func present(_ source: Source, from presenter: UIViewController) {
            switch source {
            case .documents:
                let picker = UIDocumentPickerViewController(forOpeningContentTypes: contentTypes, asCopy: true)
                picker.allowsMultipleSelection = remaining > 1
                picker.delegate = self
                presenter.present(picker, animated: true)
            case .photoLibrary:
                #if canImport(PhotosUI)
                    var configuration = PHPickerConfiguration()
                    configuration.filter = .images
                    configuration.selectionLimit = remaining
                    // HEIC photos are handed over as JPEG unless the field takes HEIC.
                    configuration.preferredAssetRepresentationMode = allows("image/heic") ? .current : .compatible
                    let picker = PHPickerViewController(configuration: configuration)
                    picker.delegate = self
                    presenter.present(picker, animated: true)
                #else
                    present(.documents, from: presenter)
                #endif
            case .camera:
                guard UIImagePickerController.isSourceTypeAvailable(.camera) else {
                    onFinish?(0, [CloakFilePickerError.sourceUnavailable])
                    return
                }
                let picker = UIImagePickerController()
                picker.sourceType = .camera
                picker.mediaTypes = [UTType.image.identifier]
                picker.delegate = self
                presenter.present(picker, animated: true)
            }
        }

        // MARK: Private

        /// The field's allowed media types as content types (any item when none maps).
        private var contentTypes: [UTType] {
            let types = field.configuration.allowedMediaTypes.compactMap { UTType(mimeType: $0) }
            return types.isEmpty ? [.item] : types
        }

        /// How many more files the field takes (at least one: a picker picks something).
        private var remaining: Int { max(1, field.configuration.maxFiles - field.files.count) }

        private func allows(_ mediaType: String) -> Bool {
            field.configuration.allowedMediaTypes.contains(mediaType)
        }

        /// Reads a picked document (called off the main thread): its bytes (unless it is larger
        /// than `maxBytes`), its name and the media type its content type gives.
        private nonisolated static func read(_ url: URL, maxBytes: Int) throws -> PickedFile {
            let scoped = url.startAccessingSecurityScopedResource()
            defer { if scoped { url.stopAccessingSecurityScopedResource() } }
            let values = try? url.resourceValues(forKeys: [.fileSizeKey, .contentTypeKey])
            if let size = values?.fileSize, size > maxBytes { throw CloakFilePickerError.tooLarge }
            let data = try Data(contentsOf: url)
            guard data.count <= maxBytes else { throw CloakFilePickerError.tooLarge }
            let type = values?.contentType ?? UTType(filenameExtension: url.pathExtension)
            return PickedFile(data: data, name: url.lastPathComponent, mediaType: type?.preferredMIMEType)
        }

        /// One picked file read (or not): once every file of the pick is, they are added to the
        /// field in the order they were picked, and `onFinish` is told.
        private func finish(_ batch: PickBatch, _ position: Int, _ outcome: Result<PickedFile, any Error>) {
            batch.outcomes[position] = outcome
            guard !batch.outcomes.contains(where: { $0 == nil }) else { return }
            var added = 0
            var failures: [any Error] = []
            for case let read? in batch.outcomes {
                switch read {
                case let .success(file):
                    field.add(data: file.data, fileName: file.name, mediaType: file.mediaType)
                    added += 1
                case let .failure(error):
                    failures.append(error)
                }
            }
            batch.outcomes = []
            onFinish?(added, failures)
        }
    }

    /// Why a picked file was not added to the field.
    public enum CloakFilePickerError: Error, Sendable, Equatable {
        /// Larger than the field allows: not read.
        case tooLarge
        /// Its bytes could not be read.
        case unreadable
        /// None of the photo's representations is a type the field allows.
        case unsupportedType
        /// The source is not available on this device (no camera).
        case sourceUnavailable
    }

    /// A picked file, read.
    private struct PickedFile: Sendable {
        let data: Data
        let name: String
        let mediaType: String?
    }

    /// What became of each file of one pick, by position, until all are read.
    @MainActor
    private final class PickBatch {
        var outcomes: [Result<PickedFile, any Error>?]

        init(count: Int) { outcomes = Array(repeating: nil, count: count) }
    }

    // MARK: Documents

    extension CloakFilePicker: @preconcurrency UIDocumentPickerDelegate {
        public func documentPicker(_ controller: UIDocumentPickerViewController, didPickDocumentsAt urls: [URL]) {
            guard !urls.isEmpty else {
                onFinish?(0, [])
                return
            }
            let batch = PickBatch(count: urls.count)
            let maxBytes = field.configuration.maxBytes
            for (position, url) in urls.enumerated() {
                // Read off the main thread: a document may be large.
                Task.detached {
                    let outcome = Result<PickedFile, any Error> {
                        try CloakFilePicker.read(url, maxBytes: maxBytes)
                    }
                    await self.finish(batch, position, outcome)
                }
            }
        }

        public func documentPickerWasCancelled(_ controller: UIDocumentPickerViewController) {
            onFinish?(0, [])
        }
    }

    // MARK: Photo library

    #if canImport(PhotosUI)
        extension CloakFilePicker: @preconcurrency PHPickerViewControllerDelegate {
            public func picker(_ picker: PHPickerViewController, didFinishPicking results: [PHPickerResult]) {
                picker.dismiss(animated: true)
                guard !results.isEmpty else {
                    onFinish?(0, [])
                    return
                }
                let batch = PickBatch(count: results.count)
                let maxBytes = field.configuration.maxBytes
                let types = contentTypes
                for (position, result) in results.enumerated() {
                    // The photo in the first type the field allows that it has.
                    let provider = result.itemProvider
                    let offered = types.first { provider.hasItemConformingToTypeIdentifier($0.identifier) }
                    guard let type = offered else {
                        finish(batch, position, .failure(CloakFilePickerError.unsupportedType))
                        continue
                    }
                    let base = provider.suggestedName ?? "photo"
                    let name = type.preferredFilenameExtension.map { "\(base).\($0)" } ?? base
                    let mediaType = type.preferredMIMEType
                    // @Sendable: the provider answers on a queue of its own, not the main actor's.
                    _ = provider.loadDataRepresentation(forTypeIdentifier: type.identifier) { @Sendable data, error in
                        let outcome: Result<PickedFile, any Error>
                        if let data {
                            outcome =
                                data.count <= maxBytes
                                ? .success(PickedFile(data: data, name: name, mediaType: mediaType))
                                : .failure(CloakFilePickerError.tooLarge)
                        } else {
                            let failure: any Error = error ?? CloakFilePickerError.unreadable
                            outcome = .failure(failure)
                        }
                        Task { @MainActor in self.finish(batch, position, outcome) }
                    }
                }
            }
        }
    #endif

    // MARK: Camera

    extension CloakFilePicker: @preconcurrency UIImagePickerControllerDelegate, UINavigationControllerDelegate {
        public func imagePickerController(
            _ picker: UIImagePickerController,
            didFinishPickingMediaWithInfo info: [UIImagePickerController.InfoKey: Any]
        ) {
            picker.dismiss(animated: true)
            // JPEG, unless the field takes PNG and not JPEG.
            let png = allows("image/png") && !allows("image/jpeg")
            guard let image = info[.originalImage] as? UIImage,
                let data = png ? image.pngData() : image.jpegData(compressionQuality: 0.9)
            else {
                onFinish?(0, [CloakFilePickerError.unreadable])
                return
            }
            guard data.count <= field.configuration.maxBytes else {
                onFinish?(0, [CloakFilePickerError.tooLarge])
                return
            }
            let (name, type) = png ? ("photo.png", "image/png") : ("photo.jpg", "image/jpeg")
            field.add(data: data, fileName: name, mediaType: type)
            onFinish?(1, [])
        }

        public func imagePickerControllerDidCancel(_ picker: UIImagePickerController) {
            picker.dismiss(animated: true)
            onFinish?(0, [])
        }
    }
#endif
