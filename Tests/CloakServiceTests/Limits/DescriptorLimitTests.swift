import CloakTesting
import Foundation
import Testing

/// Defect 5: under a small descriptor limit, `max_connections` is lowered to fit, extra
/// connections are refused, and a flood never makes the listener spin (libevent 2.1 retries
/// `accept` forever at EMFILE unless told otherwise).
@Suite(.tags(.sockets)) struct DescriptorLimitTests {
    static func cpuTicks(_ pid: Int32) -> Int {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return 0 }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // utime and stime are fields 14 and 15 of the line; 12 and 13 after the command.
        return (Int(fields[11]) ?? 0) + (Int(fields[12]) ?? 0)
    }

    @Test func aFloodUnderASmallDescriptorLimitIsRefusedWithoutSpinning() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let port = freeLoopbackPort()
        try """
        server: {listen: "127.0.0.1:\(port)", threads: 1, max_connections: 4096}
        vault: {store: "sqlite:\(directory.path)/cloak.db", keys: "file:\(directory.path)/keys.json"}
        """.write(toFile: "\(directory.path)/cloak.yaml", atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = [
            "-c", "ulimit -n 64; exec \"$0\" serve --config \"$1\"", try ProcessTests.binary.path,
            "\(directory.path)/cloak.yaml",
        ]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        let healthy = RawHTTPClient.waitUntil(port: port, path: "/healthz")
        try #require(healthy)

        // 150 connections at once, far past the 64 descriptors the process may hold.
        var sockets: [Int32] = []
        for _ in 0..<150 {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            if LoopbackSocket.connect(fd, to: port) { sockets.append(fd) } else { close(fd) }
        }
        let before = Self.cpuTicks(process.processIdentifier)
        let started = Date()
        // While they are held, the server must not burn a core: sample for about a second.
        var answered = false
        while Date().timeIntervalSince(started) < 1 {
            answered =
                answered || (try? RawHTTPClient(port: port, timeout: 0.2).request("GET", "/healthz").status) != nil
            usleep(50_000)
        }
        let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))
        let cpu = Double(Self.cpuTicks(process.processIdentifier) - before) / ticksPerSecond
        let wall = Date().timeIntervalSince(started)
        #expect(cpu < wall * 0.5, "the server used \(cpu) s of CPU in \(wall) s: spinning on accept")
        for fd in sockets { close(fd) }
        let served = RawHTTPClient.waitUntil(port: port, path: "/healthz")
        #expect(served, "the server no longer answers after the flood")
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        let log = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        // 64 descriptors leave room for 32 connections.
        #expect(
            log.contains(#""max_connections":32"#) || log.contains(#""max_connections":"32""#), "\(log.prefix(400))")
        _ = answered
    }
}
