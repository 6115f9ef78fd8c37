import CEmbeddedAssets

/// The browser files compiled into the binary by `CEmbeddedAssets` (C23 `#embed`): the one
/// place Swift reads that target's tables. Nothing is read from disk at run time, so what a
/// binary serves changes only with the binary.
enum EmbeddedAssets {
    /// Cloak Elements' files (`Elements/Assets`), by file name.
    static func elements() -> [String: ElementsAssets.Asset] { table(cloak_elements_assets) }

    /// The console's files (`Console/Assets`), by file name.
    static func console() -> [String: ElementsAssets.Asset] { table(cloak_console_assets) }

    private static func table(
        _ read: (UnsafeMutablePointer<Int>?) -> UnsafePointer<cloak_embedded_asset>?
    ) -> [String: ElementsAssets.Asset] {
        var count = 0
        guard let entries = read(&count) else { return [:] }
        var byName: [String: ElementsAssets.Asset] = [:]
        for entry in UnsafeBufferPointer(start: entries, count: count) {
            let name = String(cString: entry.name)
            guard let kind = ElementsAssets.Asset.Kind(fileName: name) else {
                // A file of a kind Cloak does not serve: ElementsTests names it.
                preconditionFailure("embedded asset \(name) has no content type")
            }
            byName[name] = ElementsAssets.Asset(
                kind, Array(UnsafeBufferPointer(start: entry.bytes, count: entry.length)))
        }
        return byName
    }
}

extension ElementsAssets.Asset.Kind {
    /// The kind a file is served as, by its extension.
    init?(fileName: String) {
        switch fileName.split(separator: ".").last {
        case "js": self = .script
        case "css": self = .style
        case "html": self = .document
        case "svg": self = .image
        default: return nil
        }
    }
}
