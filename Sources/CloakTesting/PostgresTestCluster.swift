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

extension PostgresTestCluster {
    /// Runs `scripts/postgres <arguments>`: its exit status and standard output (trimmed).
    package static func script(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let p = Process()
        p.executableURL = TestServer.repositoryRoot.appendingPathComponent("scripts/postgres")
        p.arguments = arguments
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (
            p.terminationStatus, String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        )
    }

    /// A primary with a synchronous streaming standby of its own, in `directory` (`primary/`,
    /// `standby/`), started by `scripts/postgres`: the two URLs.
    package static func primaryAndStandby(in directory: String) throws -> (primary: String, standby: String) {
        let primary = try script(["start", "\(directory)/primary"])
        guard primary.status == 0 else { throw CocoaError(.executableLoad) }
        let standby = try script(["standby", "\(directory)/primary", "\(directory)/standby"])
        guard standby.status == 0 else { throw CocoaError(.executableLoad) }
        return (primary.output, standby.output)
    }
}
