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
    /// How the requests go out.
    package enum Records: String, Sendable {
        /// Many requests per write (one 16 KiB TLS record).
        case large
        /// One request per write: one small TLS record each (issue 55, item 1).
        case small
    }

    /// - Parameters:
    ///   - records: many requests per write, or one each.
    ///   - reading: whether the client reads the answers as it goes (without blocking on them).
    ///   - connect: a `CONNECT` request sent first, on the forward-proxy door; TLS starts after
    ///     its 200.
    ///   - seconds: sends stop after this long (done, "timed").
    package init(
        port: Int, tls: Bool, proxyHeader: Bool, request: String, capBytes: Int, stallSeconds: Double = 3,
        records: Records = .large, reading: Bool = false, connect: String? = nil, seconds: Double = 3600,
        directory: String
    ) throws {
        progressFile = "\(directory)/flood-\(UUID().uuidString).txt"
        let script = "\(directory)/flood-\(UUID().uuidString).py"
        try Self.script.write(toFile: script, atomically: true, encoding: .utf8)
        _ = FileManager.default.createFile(atPath: progressFile, contents: nil)
        let python = FileManager.default.isExecutableFile(atPath: "/usr/bin/python3") ? "/usr/bin/python3" : "python3"
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            python, script, String(port), tls ? "tls" : "plain", proxyHeader ? "1" : "0", request, String(capBytes),
            String(stallSeconds), progressFile, records.rawValue, reading ? "1" : "0", connect ?? "-",
            String(seconds),
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
        port, mode, proxy, request, cap, stall, progress, records, reading, connect, seconds = sys.argv[1:12]
        cap = int(cap); stall = float(stall); seconds = float(seconds)
        request = request.replace("\\r\\n", "\r\n").encode()
        raw = socket.create_connection(("127.0.0.1", int(port)))
        if reading != "1":
            raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        if proxy == "1":
            raw.sendall(b"PROXY TCP4 198.51.100.7 127.0.0.1 40000 80\r\n")
        if connect != "-":
            raw.sendall(connect.replace("\\r\\n", "\r\n").encode())
            answer = b""
            while b"\r\n\r\n" not in answer:
                more = raw.recv(4096)
                if not more:
                    break
                answer += more
            if not answer.startswith(b"HTTP/1.1 200"):
                with open(progress, "a") as f:
                    f.write("0 refused\n")
                time.sleep(3600)
        conn = raw
        if mode == "tls":
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
            conn = context.wrap_socket(raw)
        block = request * max(1, 16384 // len(request)) if records == "large" else request
        conn.settimeout(stall)
        sent = 0
        received = 0
        done = "capped"
        last = 0
        start = time.monotonic()
        def report(extra=""):
            with open(progress, "a") as f:
                f.write("%d%s\n" % (sent, extra))
        def drain():
            # Whatever answers have arrived, without waiting for more.
            global received
            conn.setblocking(False)
            try:
                while True:
                    got = conn.recv(65536)
                    if not got:
                        break
                    received += len(got)
            except (ssl.SSLWantReadError, ssl.SSLWantWriteError, BlockingIOError):
                pass
            finally:
                conn.settimeout(stall)
        writes = 0
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
            writes += 1
            if reading == "1" and writes % 64 == 0:
                try:
                    drain()
                except (ssl.SSLError, OSError):
                    done = "closed"
                    break
            if sent - last >= 262144:
                report()
                last = sent
                if time.monotonic() - start > seconds:
                    done = "timed"
                    break
        report(" " + done)
        time.sleep(3600)
        """#
}
