import Foundation

/// An HTTPS upstream that answers every request with the same fixed bytes, sent as one TLS
/// record per element of `records` (one `sendall` each), and then ends the connection one of two
/// ways: with TLS's `close_notify` (a clean end a client may trust as the end of an answer read
/// until the close) or with a bare TCP close (what anyone on the path can forge to cut an answer
/// short); or keeps it open for the next request. Python's `ssl` (OpenSSL under another owner):
/// `unwrap()` sends `close_notify`, `close()` alone does not.
package final class TLSCannedUpstream: @unchecked Sendable {
    package enum End: String, Sendable {
        case closeNotify = "notify"
        case bareClose = "bare"
        case keepOpen = "keep"
    }

    package var port: Int { server.port }
    private let server: PythonServer

    package convenience init(certificates: TestCertificates, answer: String, end: End) throws {
        try self.init(certificates: certificates, records: [answer], end: end)
    }

    package init(certificates: TestCertificates, records: [String], end: End) throws {
        let d = certificates.directory.path
        let answerFile = "\(d)/canned-\(UUID().uuidString).json"
        try JSONEncoder().encode(records).write(to: URL(fileURLWithPath: answerFile))
        server = try PythonServer(
            script: Self.script, in: d,
            arguments: [certificates.serverCertificate, certificates.serverKey, answerFile, end.rawValue])
    }

    package func stop() { server.stop() }

    static let script =
        PythonServer.readRequest + "\n" + #"""
            import json, socket, ssl, sys, threading
            cert, key, answer_file, end = sys.argv[1:5]
            records = [r.encode() for r in json.load(open(answer_file))]
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(cert, key)
            listener = socket.create_server(("127.0.0.1", 0))
            def serve(raw):
                try:
                    conn = context.wrap_socket(raw, server_side=True)
                    conn.settimeout(10)
                    data = b""
                    while True:
                        data = read_request(conn, data)
                        if data is None:
                            return
                        for record in records:
                            conn.sendall(record)
                        if end != "keep":
                            break
                    if end == "notify":
                        conn.unwrap()  # sends close_notify (and may wait for the client's)
                    conn.close()
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
