import CloakVault
import Foundation
import Glibc
import Logging
import Synchronization

/// Refused credentials (401s), audited as counts: one event a client address, endpoint and
/// minute (`auth_refused`, fact `count`), since anyone can make them and a line each would let
/// anyone fill the store. An IPv6 address counts as its /64 (one host holds billions). The
/// minute's counts are written when the next minute's first refusal comes, every minute by the
/// timer, and at stop, in one vault job; at most ``maxKeys`` pairs a minute are told apart, the
/// rest counted under the address `*`.
final class RefusalTally: Sendable {
    struct Key: Hashable {
        let address: String
        let endpoint: String
    }

    static let maxKeys = 1_000
    static let overflowAddress = "*"

    private let state = Mutex<(minute: Int64, counts: [Key: Int])>((0, [:]))
    private let log: AuditLog
    private let timer = RepeatingTimer(label: "cloak.refusal-tally", interval: 60)

    init(log: AuditLog) { self.log = log }

    /// Counts one refusal at `now` (milliseconds since the epoch).
    func count(address: String, endpoint: String, now: Int64 = VaultAuditing.nowMilliseconds()) {
        let minute = now / 60_000
        let due = state.withLock { state -> (Int64, [Key: Int])? in
            var due: (Int64, [Key: Int])?
            if minute != state.minute {
                if !state.counts.isEmpty { due = (state.minute, state.counts) }
                state = (minute, [:])
            }
            var key = Key(address: Self.counted(address), endpoint: endpoint)
            if state.counts[key] == nil, state.counts.count >= Self.maxKeys {
                key = Key(address: Self.overflowAddress, endpoint: endpoint)
            }
            state.counts[key, default: 0] += 1
            return due
        }
        if let due { write(due.0, due.1) }
    }

    /// Writes the counts of every minute before `now`'s (the timer, and at stop with `.max`).
    func flush(before now: Int64 = VaultAuditing.nowMilliseconds()) {
        let minute = now / 60_000
        let due = state.withLock { state -> (Int64, [Key: Int])? in
            guard state.minute < minute, !state.counts.isEmpty else { return nil }
            defer { state.counts = [:] }
            return (state.minute, state.counts)
        }
        if let due { write(due.0, due.1) }
    }

    func start() { timer.start { [self] in flush() } }

    func stop() {
        timer.stop()
        flush(before: .max)
    }

    private func write(_ minute: Int64, _ counts: [Key: Int]) {
        let entries = counts.sorted(by: { ($0.key.address, $0.key.endpoint) < ($1.key.address, $1.key.endpoint) })
            .map { key, count in
                var entry = AuditEvent.Draft(
                    made: .authRefused, tokenID: "-", client: key.address, result: .refused,
                    facts: [("endpoint", key.endpoint), ("count", String(count))])
                entry.at = minute * 60_000
                return entry
            }
        log.record(entries, level: .warning)
    }

    /// The address a refusal counts under: an IPv4 address as it is, an IPv6 one as its /64.
    static func counted(_ address: String) -> String {
        guard address.contains(":") else { return address }
        var bytes = in6_addr()
        guard inet_pton(AF_INET6, address, &bytes) == 1 else { return address }
        withUnsafeMutableBytes(of: &bytes) { raw in
            for i in 8..<16 { raw[i] = 0 }
        }
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        guard inet_ntop(AF_INET6, &bytes, &text, socklen_t(text.count)) != nil else { return address }
        let end = text.firstIndex(of: 0) ?? text.endIndex
        return String(decoding: text[..<end].map { UInt8(bitPattern: $0) }, as: UTF8.self) + "/64"
    }
}
