import ArgumentParser
import CloakService
import Foundation

struct Reload: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Tell a running cloak serve to read its configuration again (SIGHUP).",
        discussion: """
            Checks the file first (as check-config) and signals the process whose id is in \
            server.pid_file. Forms, routes, egress routes, limits, auth tokens, CORS and Elements' \
            origins take effect for requests that start after it; settings that need a restart \
            (listen address, threads, TLS, store, keys) are logged and kept. Exit 2: the file \
            does not check, or the pid file names no cloak serve of this configuration (a stale \
            one after a crash: nothing is signalled).
            """)
    @OptionGroup var options: ConfigOption

    func run() throws {
        let configuration = try options.load()
        guard let pidFile = configuration.pidFile else {
            Keys.fail(
                "server.pid_file is not set: send SIGHUP to the cloak serve process yourself "
                    + "(kill -HUP <pid>, or systemctl reload), or set server.pid_file and restart it")
        }
        guard let text = try? String(contentsOfFile: pidFile, encoding: .utf8),
            let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)), pid > 1
        else {
            Keys.fail("cannot read a process id from \(pidFile): is cloak serve running with this configuration?")
        }
        // A pid file a crash left behind may name any process by now.
        let configPath = URL(fileURLWithPath: options.config).standardizedFileURL.path
        if let mismatch = ServeProcess.mismatch(pid: pid, configPath: configPath) {
            Keys.fail(
                "\(pidFile) names process \(pid), but \(mismatch): nothing was signalled (a stale pid file? "
                    + "start cloak serve, or signal it yourself)")
        }
        guard kill(pid, SIGHUP) == 0 else {
            Keys.fail("cannot signal process \(pid) (\(String(cString: strerror(errno)))): is cloak serve running?")
        }
        print("sent SIGHUP to cloak serve (pid \(pid)); its log says what was applied or refused")
    }
}
