import ArgumentParser
import CloakService
import Foundation

struct Reload: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Tell a running cloak serve to read its configuration again (SIGHUP).",
        discussion: """
            Checks the file first (as check-config) and signals the process whose id is in \
            server.pid_file or, without one, the one cloak serve of this configuration running \
            on this machine (found in /proc). Forms, routes, egress routes, limits, auth tokens, CORS and Elements' \
            origins take effect for requests that start after it; settings that need a restart \
            (listen address, threads, TLS, store, keys) are logged and kept. Exit 2: the file \
            does not check, or the pid file names no cloak serve of this configuration (a stale \
            one after a crash: nothing is signalled).
            """)
    @OptionGroup var options: ConfigOption

    func run() throws {
        let configuration = try options.load()
        let configPath = URL(fileURLWithPath: options.config).standardizedFileURL.path
        guard let pidFile = configuration.pidFile else {
            // No pid file (the shipped configuration sets none): the one cloak serve of this
            // configuration on this machine, found by its command line (review V, item 10).
            let found = ServeProcess.running(configPath: configPath)
            guard found.count == 1, let pid = found.first else {
                Keys.fail(
                    "server.pid_file is not set, and "
                        + (found.isEmpty
                            ? "no cloak serve of \(configPath) runs on this machine"
                            : "\(found.count) cloak serve processes of \(configPath) run (\(found.map(String.init).joined(separator: ", ")))")
                        + ": send SIGHUP yourself (kill -HUP <pid>, or systemctl reload), or set server.pid_file")
            }
            return try signal(pid, from: "the cloak serve of \(configPath) (no server.pid_file)")
        }
        guard let text = try? String(contentsOfFile: pidFile, encoding: .utf8),
            let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)), pid > 1
        else {
            Keys.fail("cannot read a process id from \(pidFile): is cloak serve running with this configuration?")
        }
        // A pid file a crash left behind may name any process by now.
        if let mismatch = ServeProcess.mismatch(pid: pid, configPath: configPath) {
            Keys.fail(
                "\(pidFile) names process \(pid), but \(mismatch): nothing was signalled (a stale pid file? "
                    + "start cloak serve, or signal it yourself)")
        }
        try signal(pid, from: pidFile)
    }

    private func signal(_ pid: Int32, from source: String) throws {
        guard kill(pid, SIGHUP) == 0 else {
            Keys.fail("cannot signal process \(pid) (\(String(cString: strerror(errno)))): is cloak serve running?")
        }
        print("sent SIGHUP to cloak serve (pid \(pid), \(source)); its log says what was applied or refused")
    }
}
