import Foundation

/// The lines of the repository's Swift sources that match a pattern (doc comments aside): the
/// tests that keep a vocabulary spelled in one file (scopes, audit actions) read with it.
package enum SourceScan {
    /// `folder/file:line` of each match under `folders`, files ending in `excluding` left out.
    package static func matches<Output>(_ pattern: Regex<Output>, in folders: [String], excluding: [String]) throws
        -> [String]
    {
        let root = TestServer.repositoryRoot
        var found: [String] = []
        for folder in folders {
            let base = root.appendingPathComponent(folder)
            let files = FileManager.default.enumerator(atPath: base.path)?.compactMap { $0 as? String } ?? []
            for file in files.sorted()
            where file.hasSuffix(".swift") && !excluding.contains(where: { file.hasSuffix($0) }) {
                let text = try String(contentsOf: base.appendingPathComponent(file), encoding: .utf8)
                for (n, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
                where !line.trimmingCharacters(in: .whitespaces).hasPrefix("///") && line.contains(pattern) {
                    found.append("\(folder)/\(file):\(n + 1)")
                }
            }
        }
        return found
    }
}
