import Foundation

/// A real HTTPS upstream on loopback (Python's `http.server` with `ssl`, a peer Cloak does not
/// share code with) that records every request it receives and answers with the body it got,
/// same `Content-Type` (or the request's `X-Echo-Content-Type`; gzipped, with `Content-Encoding`,
/// when the request has `X-Echo-Gzip`). With `requireClientCertificate` it refuses clients without a certificate
/// signed by the test CA (mutual TLS).
package final class TLSUpstream: @unchecked Sendable {
    package var port: Int { server.port }
    private let server: PythonServer
    private let log: String

    /// One request as the upstream received it.
    package struct Received: Sendable {
        package let method: String
        package let path: String
        package let headers: [(name: String, value: String)]
        package let body: String
        /// The client certificate's subject, when one was presented.
        package let clientCertificate: String?

        package func header(_ name: String) -> String? {
            headers.first { $0.name.lowercased() == name.lowercased() }?.value
        }
    }

    /// - Parameter recordBodies: false keeps only each body's length in ``received`` (storms of
    ///   large bodies).
    package init(certificates: TestCertificates, requireClientCertificate: Bool = false, recordBodies: Bool = true)
        throws
    {
        let d = certificates.directory.path
        log = "\(d)/upstream-\(UUID().uuidString).jsonl"
        server = try PythonServer(
            script: Self.script, in: d,
            arguments: [
                certificates.serverCertificate, certificates.serverKey,
                requireClientCertificate ? certificates.caFile : "-", log, recordBodies ? "1" : "0",
            ])
    }

    /// Every request received so far, in order.
    package var received: [Received] {
        guard let text = try? String(contentsOfFile: log, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                return nil
            }
            let headers = (object["headers"] as? [[String]] ?? []).map { (name: $0[0], value: $0[1]) }
            return Received(
                method: object["method"] as? String ?? "", path: object["path"] as? String ?? "",
                headers: headers, body: object["body"] as? String ?? "",
                clientCertificate: object["client"] as? String)
        }
    }

    package func stop() { server.stop() }

    static let script = #"""
        import gzip, http.server, json, ssl, sys, threading
        cert, key, client_ca, log, record_bodies = sys.argv[1:6]
        lock = threading.Lock()
        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            def answer(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0") or "0"))
                peer = self.connection.getpeercert()
                client = None
                if peer:
                    client = ",".join("%s=%s" % pair for part in peer.get("subject", ()) for pair in part)
                record = {"method": self.command, "path": self.path, "headers": [[k, v] for k, v in self.headers.items()],
                          "body": body.decode("latin-1") if record_bodies == "1" else str(len(body)), "client": client}
                with lock, open(log, "a") as f:
                    f.write(json.dumps(record) + "\n")
                # The echo is of the request's type, or of X-Echo-Content-Type; gzipped on X-Echo-Gzip.
                answer = gzip.compress(body) if self.headers.get("X-Echo-Gzip") else body
                self.send_response(200)
                self.send_header("Content-Type", self.headers.get("X-Echo-Content-Type")
                                 or self.headers.get("Content-Type", "application/octet-stream"))
                if self.headers.get("X-Echo-Gzip"):
                    self.send_header("Content-Encoding", "gzip")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)
            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = answer
            def log_message(self, *args):
                pass
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        if client_ca != "-":
            context.verify_mode = ssl.CERT_REQUIRED
            context.load_verify_locations(client_ca)
        server.socket = context.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
        print(server.server_address[1], flush=True)
        server.serve_forever()
        """#
}

extension FileHandle {
    /// One line (without waiting for more than it).
    package func readLine() -> String {
        var bytes: [UInt8] = []
        while true {
            let data = readData(ofLength: 1)
            guard let byte = data.first, byte != 10 else { break }
            bytes.append(byte)
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
