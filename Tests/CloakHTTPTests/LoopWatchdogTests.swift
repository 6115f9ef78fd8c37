import CloakTesting
import Foundation
import Synchronization
import Testing

@testable import CloakHTTP

/// Review defect 1: a stuck loop must be visible to a balancer, not only to the loop's own
/// clients. Every loop beats a ``LoopWatchdog`` from its sweep timer.
@Suite(.tags(.sockets)) struct LoopWatchdogTests {
    @Test func aLoopIsStalledOnlyPastTheLimitSinceItsLastBeat() {
        let watchdog = LoopWatchdog()
        let a = watchdog.register(name: "main-0", now: 1_000)
        let b = watchdog.register(name: "egress-0", now: 1_000)
        #expect(watchdog.stalledLoops(now: 1_500, limit: 500).isEmpty)
        #expect(watchdog.stalledLoops(now: 1_501, limit: 500) == ["main-0", "egress-0"])
        a.beat(now: 1_450)
        #expect(watchdog.stalledLoops(now: 1_901, limit: 500) == ["egress-0"])
        b.beat(now: 2_000)
        #expect(watchdog.stalledLoops(now: 1_901, limit: 500).isEmpty)  // a beat after `now` is fresh
        watchdog.unregister([a])
        #expect(watchdog.stalledLoops(now: 10_000, limit: 500) == ["egress-0"])
    }

    @Test func aLoopBlockedInAHandlerStopsBeatingAndResumesWhenFreed() throws {
        let watchdog = LoopWatchdog()
        let gate = DispatchSemaphore(value: 0)
        let server = try HTTPServer(
            configuration: .init(port: 0, threads: 1),
            deferredHandler: { request, responder in
                if request.path == "/block" { gate.wait() }  // holds the loop thread itself
                responder.respond(HTTPResponse(status: 200))
            }, watchdog: watchdog, name: "main")
        server.start()
        defer { server.shutdown() }
        let limit: UInt64 = 300_000_000
        func stalled() -> [String] { watchdog.stalledLoops(now: LoopWorker.now(), limit: limit) }
        #expect(try RawHTTPClient(port: server.port).request("GET", "/").status == 200)
        #expect(stalled().isEmpty)
        let blocked = Thread { _ = try? RawHTTPClient(port: server.port, timeout: 30).request("GET", "/block") }
        blocked.start()
        var seen: [String] = []
        for _ in 0..<200 where seen.isEmpty {
            seen = stalled()
            if seen.isEmpty { Thread.sleep(forTimeInterval: 0.05) }
        }
        #expect(seen == ["main-0"])
        gate.signal()
        var cleared = false
        for _ in 0..<200 where !cleared {
            cleared = stalled().isEmpty
            if !cleared { Thread.sleep(forTimeInterval: 0.05) }
        }
        #expect(cleared)
    }
}
