import Foundation

/// Whether a process id names a `cloak serve` of a given configuration file, read from Linux's
/// `/proc`: a pid file left behind by a crash may name any process by now, and `cloak reload`
/// must not signal it (issue 44, defect 10).
enum ServeProcess {
    /// Why `pid` is not a `cloak serve` reading `configPath` (an absolute path), or nil when it is.
    static func mismatch(pid: Int32, configPath: String) -> String? {
        guard let raw = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline"), !raw.isEmpty else {
            return "no process \(pid) is running"
        }
        let arguments = raw.split(separator: 0, omittingEmptySubsequences: false).map {
            String(decoding: $0, as: UTF8.self)
        }
        // The program is `cloak` and its subcommand `serve` (not "serve" anywhere: `cloak tokens
        // create --id serve` is no node, nor is a `cloakroom`).
        guard let program = arguments.first, URL(fileURLWithPath: program).lastPathComponent == "cloak",
            arguments.count > 1, arguments[1] == "serve"
        else { return "process \(pid) is not cloak serve" }
        let serve = 1
        // The configuration it was started with: --config PATH or --config=PATH, relative to its
        // working directory; the default otherwise.
        var given = "config/cloak.yaml"
        var rest = arguments[(serve + 1)...].makeIterator()
        while let argument = rest.next() {
            if argument == "--config", let path = rest.next() {
                given = path
            } else if argument.hasPrefix("--config=") {
                given = String(argument.dropFirst("--config=".count))
            }
        }
        let directory = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/cwd")) ?? "/"
        let theirs = URL(fileURLWithPath: given, relativeTo: URL(fileURLWithPath: directory, isDirectory: true))
            .standardizedFileURL.resolvingSymlinksInPath().path
        let ours = URL(fileURLWithPath: configPath).standardizedFileURL.resolvingSymlinksInPath().path
        guard theirs == ours else { return "process \(pid) is a cloak serve of another configuration (\(theirs))" }
        return nil
    }

    /// The `cloak serve` processes of `configPath` running now, by their `/proc` entries (a node
    /// without `server.pid_file`; `scripts/serve` runs one so).
    static func running(configPath: String) -> [Int32] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        let me = getpid()
        return entries.compactMap { Int32($0) }.filter {
            $0 > 1 && $0 != me && mismatch(pid: $0, configPath: configPath) == nil
        }
        .sorted()
    }
}
