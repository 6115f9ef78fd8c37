import Foundation

/// One client that pipelines the same request without ever reading an answer (issue 44,
/// defect 1), in Python (a peer that shares no code with Cloak): plain or TLS, with a PROXY v1
/// header first when asked. It sends until the server stops taking bytes (a send blocked for
/// `stallSeconds`: TCP pushed back) or `capBytes` went out, then keeps the connection open,
/// unread, until stopped. ``sent()`` is what went out so far.
package final class PipeliningFlood: @unchecked Sendable {
    private let process = Process()
    private let progressFile: String

    /// - Parameters:
    ///   - tls: wrap the connection in TLS (no verification: a flood needs none).
    ///   - proxyHeader: send `PROXY TCP4 …` before anything else.
    ///   - request: the request sent again and again.
    package init(
        port: Int, tls: Bool, proxyHeader: Bool, request: String, capBytes: Int, stallSeconds: Double = 3,
        directory: String
    ) throws {
        progressFile = "\(directory)/flood-\(UUID().uuidString).txt"
        let script = "\(directory)/flood-\(UUID().uuidString).py"
        try Self.script.write(toFile: script, atomically: true, encoding: .utf8)
        FileManager.default.createFile(atPath: progressFile, contents: nil)
        let python = FileManager.default.isExecutableFile(atPath: "/usr/bin/python3") ? "/usr/bin/python3" : "python3"
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            python, script, String(port), tls ? "tls" : "plain", proxyHeader ? "1" : "0", request, String(capBytes),
            String(stallSeconds), progressFile,
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
    }

    /// Bytes sent so far, and whether the sender is done (stalled or at its cap).
    package func progress() -> (sent: Int, done: Bool) {
        let text = (try? String(contentsOfFile: progressFile, encoding: .utf8)) ?? ""
        let last = text.split(separator: "\n").last.map(String.init) ?? ""
        let parts = last.split(separator: " ")
        return (parts.first.flatMap { Int($0) } ?? 0, parts.count > 1)
    }

    /// Killed with SIGKILL (a SIGTERM may be blocked in the mask the test process passed on).
    package func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    static let script = #"""
        import socket, ssl, sys, time
        port, mode, proxy, request, cap, stall, progress = sys.argv[1:8]
        cap = int(cap); stall = float(stall)
        request = request.replace("\\r\\n", "\r\n").encode()
        raw = socket.create_connection(("127.0.0.1", int(port)))
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        if proxy == "1":
            raw.sendall(b"PROXY TCP4 198.51.100.7 127.0.0.1 40000 80\r\n")
        conn = raw
        if mode == "tls":
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
            conn = context.wrap_socket(raw)
        block = request * max(1, 16384 // len(request))
        conn.settimeout(stall)
        sent = 0
        done = "capped"
        last = 0
        def report(extra=""):
            with open(progress, "a") as f:
                f.write("%d%s\n" % (sent, extra))
        while sent < cap:
            try:
                conn.sendall(block)
            except socket.timeout:
                done = "stalled"
                break
            except (ssl.SSLError, OSError):
                done = "closed"
                break
            sent += len(block)
            if sent - last >= 262144:
                report()
                last = sent
        report(" " + done)
        time.sleep(3600)
        """#
}
