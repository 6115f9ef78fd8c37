import Foundation

/// A test server written in Python (a peer that shares no code with Cloak): the script is
/// written into `directory`, started with `arguments`, and prints the port it listens on as
/// its first line. Stopped with SIGKILL and reaped.
package struct PythonServer: Sendable {
    package let port: Int
    private let pid: Int32

    package init(script: String, in directory: String, arguments: [String]) throws {
        let path = "\(directory)/server-\(UUID().uuidString).py"
        try script.write(toFile: path, atomically: true, encoding: .utf8)
        let process = Process()
        // Debian's python3 when there is one (no version-manager shim between us and the process).
        let python = FileManager.default.isExecutableFile(atPath: "/usr/bin/python3") ? "/usr/bin/python3" : "python3"
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [python, path] + arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        guard let port = Int(out.fileHandleForReading.readLine().trimmingCharacters(in: .whitespacesAndNewlines))
        else {
            process.terminate()
            throw CocoaError(.executableLoad)
        }
        self.port = port
        pid = process.processIdentifier
    }

    package func stop() {
        kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
    }

    /// Python that the canned upstreams use: `read_body(conn, data)` reads one request (its head,
    /// then a body of its `Content-Length`) and returns the bytes after it and its body, or None
    /// when the peer closed first; `read_request` the bytes after it alone.
    package static let readRequest = #"""
        def read_body(conn, data):
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    return None
                data += chunk
            head, _, data = data.partition(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value.strip())
            while len(data) < length:
                chunk = conn.recv(65536)
                if not chunk:
                    return None
                data += chunk
            return data[length:], data[:length]
        def read_request(conn, data):
            read = read_body(conn, data)
            return None if read is None else read[0]
        """#
}
