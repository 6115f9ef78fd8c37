import CloakCore
import CloakHTTP
import CloakVault
import Foundation
import Synchronization

extension CloakService {
    /// What this node says of itself (the console's overview; every node's heartbeat carries
    /// it): version, start, readiness, store kind, key versions, BIN table, and its answers
    /// since start. Counts and names only: nothing a caller sent.
    package func nodeStatus(now: Int64 = Int64(Date().timeIntervalSince1970)) -> JSONValue {
        let stalled = watchdog.stalledLoops(
            now: LoopWatchdog.now(), limit: UInt64(configuration.loopStallSeconds * 1e9))
        let draining = state.isDraining.load(ordering: .relaxed)
        let totals = metrics.requests.totals()
        var members: [(key: String, value: JSONValue)] = [
            ("version", .string(Self.version)),
            ("started_at", .string(RevealedRecord.iso8601(state.startedAt))),
            ("uptime_s", .int(Int(max(0, now - state.startedAt)))),
            ("ready", .bool(!draining && stalled.isEmpty)),
            ("draining", .bool(draining)),
            ("store", .string(Self.storeKind(configuration.vault.store))),
        ]
        // The store's disk against limits.disk_reserve_mib (review V, item 4): free MiB when the
        // node sees it (null otherwise), and whether what grows the store is being refused.
        let disk = state.diskReserve.current
        members.append(
            (
                "disk",
                .object([
                    ("free_mib", disk.freeBytes.map { .int(Int($0 >> 20)) } ?? .null),
                    ("reserve_mib", .int(configuration.limits.diskReserveMiB)),
                    ("below_reserve", .bool(state.diskReserve.isBelow(configuration.limits.diskReserveMiB))),
                ])
            ))
        if let vault {
            let keys = vault.keyVersions
            members.append(("keys", .object([("current", .string(keys.current)), ("versions", .strings(keys.ids))])))
        } else {
            members.append(("keys", .null))
        }
        if let bins = binRefresh?.current?.document {
            members.append(
                ("bins", .object([("version", .int(Int(bins.version))), ("sha256", .string(bins.shortDigest))])))
        } else {
            members.append(("bins", .null))
        }
        members += [
            ("requests", .int(totals.requests)), ("client_errors", .int(totals.clientErrors)),
            ("server_errors", .int(totals.serverErrors)),
        ]
        return .object(members)
    }

    /// `sqlite` or `postgresql` (never the URL: it may hold a password).
    static func storeKind(_ store: String) -> String {
        store.hasPrefix("postgres") ? "postgresql" : store.hasPrefix("sqlite:") ? "sqlite" : "other"
    }
}
