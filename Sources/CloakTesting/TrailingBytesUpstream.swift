import Foundation

/// An upstream (plain or TLS) that answers every request with `200 ok` and then, while the
/// connection's next request has not arrived, sends a second answer nobody asked for:
/// `200 s000001-TAG`, numbered, tagged with the letters and digits of the body of the request
/// it trails (no tag for an empty body). It records, per number, whether the next request was still absent
/// once the bytes were sent (`early`: they reached the client before its next request was
/// written, and a client must never give them to that request's caller) or had arrived by then
/// (`late`: the two crossed, and in HTTP/1.1 bytes sent after a request was written are its
/// answer as far as any client can tell). Issue 44, defect 0.
package final class TrailingBytesUpstream: @unchecked Sendable {
    package enum Transport: String, Sendable { case plain, tls }

    package var port: Int { server.port }
    private let server: PythonServer
    private let logFile: String

    package init(_ transport: Transport, certificates: TestCertificates) throws {
        let d = certificates.directory.path
        logFile = "\(d)/trailing-\(UUID().uuidString).log"
        _ = FileManager.default.createFile(atPath: logFile, contents: nil)
        server = try PythonServer(
            script: Self.script, in: d,
            arguments: [transport.rawValue, certificates.serverCertificate, certificates.serverKey, logFile])
    }

    package func stop() { server.stop() }

    /// The trailers recorded so far: number → whether it was sent while the next request had
    /// not arrived.
    package func trailers() -> [String: Bool] {
        let text = (try? String(contentsOfFile: logFile, encoding: .utf8)) ?? ""
        var out: [String: Bool] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: " ")
            guard parts.count == 2 else { continue }
            out[String(parts[0])] = parts[1] == "early"
        }
        return out
    }

    static let script =
        PythonServer.readRequest + "\n" + #"""
            import select, socket, ssl, sys, threading
            mode, cert, key, log_path = sys.argv[1:5]
            answer = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok"
            lock = threading.Lock()
            counter = [0]
            log = open(log_path, "a", buffering=1)
            context = None
            if mode == "tls":
                context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
                context.load_cert_chain(cert, key)
            listener = socket.create_server(("127.0.0.1", 0))
            def arrived(conn, data):
                if data:
                    return True
                if context is not None and conn.pending():
                    return True
                return bool(select.select([conn], [], [], 0)[0])
            def serve(raw):
                try:
                    # Every send leaves at once: with Nagle's algorithm the bytes behind an answer
                    # would wait for its acknowledgement, which the next request carries, and reach
                    # the client after that request was written although recorded as early.
                    raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    conn = context.wrap_socket(raw, server_side=True) if context else raw
                    conn.settimeout(10)
                    data = b""
                    while True:
                        body = read_body(conn, data)
                        if body is None:
                            return
                        data = body[0]
                        tag = "".join(c for c in body[1].decode("latin-1") if c.isalnum())[:12]
                        conn.sendall(answer)
                        if not arrived(conn, data):
                            with lock:
                                counter[0] += 1
                                n = "s%06d" % counter[0]
                            # The stray names the request it trails (its body, letters and
                            # digits only): whoever gets it can tell whose connection it was.
                            stray = (n + ("-" + tag if tag else "")).encode()
                            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n" % len(stray) + stray)
                            log.write("%s %s\n" % (n, "late" if arrived(conn, data) else "early"))
                except Exception:
                    pass
                finally:
                    raw.close()
            print(listener.getsockname()[1], flush=True)
            while True:
                raw, _ = listener.accept()
                threading.Thread(target=serve, args=(raw,), daemon=True).start()
            """#
}
