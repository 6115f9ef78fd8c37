import Foundation
import Testing

@testable import CloakService

/// The browser files compiled in by `CEmbeddedAssets`: every file of the asset folders is served,
/// byte for byte, as the content type its extension names.
@Suite struct EmbeddedAssetsTests {
    /// `Sources/CloakService/<group>/Assets`, read from this checkout.
    private static func folder(_ group: String) -> URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources/CloakService/\(group)/Assets")
    }

    private static func files(_ group: String) throws -> [String: [UInt8]] {
        let names = try FileManager.default.contentsOfDirectory(atPath: folder(group).path)
        var files: [String: [UInt8]] = [:]
        for name in names {
            files[name] = try [UInt8](Data(contentsOf: folder(group).appendingPathComponent(name)))
        }
        return files
    }

    @Test func everyElementsFileIsServedAsItIsOnDisk() throws {
        let onDisk = try Self.files("Elements")
        #expect(!onDisk.isEmpty)
        #expect(Set(ElementsAssets.byName.keys) == Set(onDisk.keys))
        for (name, bytes) in onDisk {
            #expect(ElementsAssets.byName[name]?.bytes == bytes, "\(name)")
        }
    }

    @Test func everyConsoleFileIsServedAsItIsOnDisk() throws {
        var onDisk = try Self.files("Console")
        #expect(ConsoleAssets.page.bytes == onDisk.removeValue(forKey: "console.html"))
        #expect(ConsoleAssets.page.kind == .document)
        #expect(Set(ConsoleAssets.byName.keys) == Set(onDisk.keys))
        for (name, bytes) in onDisk {
            #expect(ConsoleAssets.byName[name]?.bytes == bytes, "\(name)")
        }
    }

    @Test(arguments: [
        ("cloak.js", ElementsAssets.Asset.Kind.script), ("frame.css", .style), ("field.html", .document),
        ("favicon.svg", .image),
    ])
    func aFileIsServedAsItsExtensionSays(name: String, kind: ElementsAssets.Asset.Kind) {
        #expect(ElementsAssets.Asset.Kind(fileName: name) == kind)
    }

    @Test(arguments: ["notes.txt", "script", "image.png", ""])
    func aFileOfAnotherKindHasNone(name: String) {
        #expect(ElementsAssets.Asset.Kind(fileName: name) == nil)
    }

    @Test func theLoaderIsElementsCloakJS() {
        #expect(!ElementsAssets.loader.isEmpty)
        #expect(ElementsAssets.loader == ElementsAssets.byName["cloak.js"]?.bytes)
    }
}
