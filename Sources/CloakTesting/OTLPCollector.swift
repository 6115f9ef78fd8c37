import Foundation

/// A stand-in OpenTelemetry collector in Python (shares no code with Cloak): it records every
/// OTLP/HTTP request it receives (path, headers, body, the client certificate's subject) and
/// answers each with the next status of its plan (`"503:2"` is 503 with `Retry-After: 2`,
/// `"200+rejected:3"` a partial success that rejected 3 spans); the last status of the plan
/// answers every request after it. Plain HTTP, or TLS (with a client
/// certificate required when `requireClientCertificate`).
package final class OTLPCollector: Sendable {
    package var port: Int { server.port }
    private let server: PythonServer
    private let log: String

    package struct Received: Sendable {
        package let path: String
        package let headers: [(name: String, value: String)]
        package let body: [UInt8]
        package let clientCertificate: String?

        package func header(_ name: String) -> String? {
            headers.first { $0.name.lowercased() == name.lowercased() }?.value
        }
    }

    /// - Parameters:
    ///   - port: 0 for any free port; a given one to come back where a collector was down.
    ///   - tls: the server's certificate and key (and the CA for client certificates) from these.
    package init(
        plan: [String] = ["200"], port: Int = 0, directory: String, tls: TestCertificates? = nil,
        requireClientCertificate: Bool = false
    ) throws {
        log = "\(directory)/collector-\(UUID().uuidString).jsonl"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        server = try PythonServer(
            script: Self.script, in: directory,
            arguments: [
                String(port), log, plan.joined(separator: ","), tls?.serverCertificate ?? "-", tls?.serverKey ?? "-",
                requireClientCertificate ? (tls?.caFile ?? "-") : "-",
            ])
    }

    /// Every request received so far, in order.
    package var received: [Received] {
        guard let text = try? String(contentsOfFile: log, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                return nil
            }
            return Received(
                path: object["path"] as? String ?? "",
                headers: (object["headers"] as? [[String]] ?? []).map { (name: $0[0], value: $0[1]) },
                body: Array(Data(base64Encoded: object["body"] as? String ?? "") ?? Data()),
                clientCertificate: object["client"] as? String)
        }
    }

    package func stop() { server.stop() }

    static let script = #"""
        import base64, http.server, json, socket, ssl, sys, threading
        port, log, plan, cert, key, client_ca = sys.argv[1:7]
        plan = plan.split(",")
        lock = threading.Lock()
        answered = [0]
        def varint(n):
            out = b""
            while n >= 0x80:
                out += bytes([(n & 0x7f) | 0x80])
                n >>= 7
            return out + bytes([n])
        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0") or "0"))
                peer = self.connection.getpeercert() if cert != "-" else None
                client = None
                if peer:
                    client = ",".join("%s=%s" % pair for part in peer.get("subject", ()) for pair in part)
                with lock:
                    step = plan[min(answered[0], len(plan) - 1)]
                    answered[0] += 1
                    with open(log, "a") as f:
                        f.write(json.dumps({"path": self.path, "headers": [[k, v] for k, v in self.headers.items()],
                                            "body": base64.b64encode(body).decode(), "client": client}) + "\n")
                answer = b""
                if "+rejected:" in step:
                    step, _, count = step.partition("+rejected:")
                    # ExportTraceServiceResponse { partial_success (1) { rejected_spans (1) } }
                    inner = b"\x08" + varint(int(count)) + b"\x12\x04full"
                    answer = b"\x0a" + varint(len(inner)) + inner
                status, _, retry_after = step.partition(":")
                self.send_response(int(status))
                if retry_after:
                    self.send_header("Retry-After", retry_after)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)
            def log_message(self, *args):
                pass
        class Server(http.server.ThreadingHTTPServer):
            allow_reuse_address = True
            daemon_threads = True
        server = Server(("127.0.0.1", int(port)), Handler)
        if cert != "-":
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(cert, key)
            if client_ca != "-":
                context.verify_mode = ssl.CERT_REQUIRED
                context.load_verify_locations(client_ca)
            server.socket = context.wrap_socket(server.socket, server_side=True)
        print(server.server_address[1], flush=True)
        server.serve_forever()
        """#
}
