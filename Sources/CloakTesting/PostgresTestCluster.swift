import Foundation

/// The PostgreSQL cluster the test command started (`scripts/test` runs `scripts/postgres start`
/// and exports `CLOAK_TEST_POSTGRES_URL`). Each test takes a fresh database of it.
package enum PostgresTestCluster {
    /// The cluster's URL, when there is one.
    package static var url: String? {
        ProcessInfo.processInfo.environment["CLOAK_TEST_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// Whether PostgreSQL tests can run (they are skipped, with this reason, when not).
    package static var isAvailable: Bool { url != nil }

    /// A new empty database on the cluster; its URL.
    package static func freshDatabase() throws -> String {
        guard let url, let slash = url.lastIndex(of: "/") else { throw CocoaError(.featureUnsupported) }
        let name = "cloak_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(16)
        try psql(url, "CREATE DATABASE \(name)")
        return String(url[..<slash]) + "/" + name
    }

    /// Runs one SQL command with `psql` (the server package's client).
    package static func psql(_ url: String, _ sql: String) throws {
        let bin =
            (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql"))?
            .sorted { $0.compare($1, options: .numeric) == .orderedAscending }.last
            .map { "/usr/lib/postgresql/\($0)/bin/psql" } ?? "psql"
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = [bin, url, "-v", "ON_ERROR_STOP=1", "-q", "-c", sql]
        p.standardOutput = FileHandle.nullDevice
        let err = Pipe()
        p.standardError = err
        try p.run()
        _ = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else { throw CocoaError(.executableLoad) }
    }
}
