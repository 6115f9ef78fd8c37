import CloakTesting
import Foundation
import Testing

/// README "Tests" names each test tag and how it runs (issue 75): its table must list exactly
/// the tags `Sources/CloakTesting/TestTags.swift` declares, and `scripts/tagged` must turn each
/// into a filter that selects at least one suite, so no tag in the docs runs nothing.
@Suite(.tags(.processes)) struct TestTagTableTests {
    static let root = TestServer.repositoryRoot

    static func declaredTags() throws -> Set<String> {
        let text = try String(
            contentsOf: root.appendingPathComponent("Sources/CloakTesting/TestTags.swift"), encoding: .utf8)
        return Set(
            text.matches(of: /@Tag package static var (\w+): Self/).map { String($0.output.1) })
    }

    static func documentedTags() throws -> Set<String> {
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        guard let start = readme.range(of: "\n## Tests\n"),
            let end = readme.range(of: "\n## ", range: start.upperBound..<readme.endIndex)
        else { return [] }
        let section = readme[start.upperBound..<end.lowerBound]
        return Set(section.matches(of: /\n\| `\.(\w+)` \|/).map { String($0.output.1) })
    }

    @Test func theReadmesTableListsEveryTagAndNoOther() throws {
        let declared = try Self.declaredTags()
        #expect(declared.count >= 6)
        #expect(try Self.documentedTags() == declared)
    }

    @Test func everyTagSelectsASuite() throws {
        for tag in try Self.declaredTags().sorted() {
            let process = Process()
            process.executableURL = Self.root.appendingPathComponent("scripts/tagged")
            process.arguments = [tag]
            let out = Pipe()
            process.standardOutput = out
            try process.run()
            let data = out.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            let filter = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(process.terminationStatus == 0, "scripts/tagged \(tag)")
            // `\.(SuiteA/|SuiteB/|SuiteC/test\()`: one suite or test or more.
            #expect(
                filter.hasPrefix("\\.(") && filter.hasSuffix(")") && filter.contains("/"),
                "scripts/tagged \(tag): \(filter)")
        }
    }
}
