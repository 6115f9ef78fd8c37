import CloakCore
import CloakHTTP
import CloakVault
import Foundation
import Synchronization

/// `limits.disk_reserve_mib` (review V, item 4): room the store's disk keeps for what must not
/// fail. Since reveals write their audit event in the store, a full disk stopped every audited
/// read (SQLite failed 3,940 of 3,963 reveals). Below the reserve, what grows the store (new
/// values, uploads, imports, exports: ``growsStore``) is refused with 507 and `Retry-After`,
/// and running jobs wait, while reveals, deletes and their audit keep the room.
///
/// The free space is read (`statvfs`) once a second off the requests' path, from the directory
/// that holds the store: the SQLite file's, or a PostgreSQL server's data directory when it is
/// on this machine and the node may read its path. Elsewhere the node cannot see the server's
/// disk (`/readyz` and the overview say `free_mib: null`) and learns it from the store's
/// errors instead: for ``reportedFullSeconds`` after the store said its disk is full
/// (PostgreSQL's 53100, SQLite's `SQLITE_FULL`), the node is below the reserve, so what grows
/// the store waits while what it frees (autovacuum, an operator) goes to reveals and deletes.
final class DiskReserve: Sendable {
    /// The endpoints refused below the reserve: those that add values, files, imports or
    /// exports to the store. Reveals, lookups, updates, deletes and reads are not.
    static let growsStore: Set<String> = [
        "form-tokens", "form-aliases", "form-send", "create-tokens", "create-aliases", "keep", "update",
        "tokens-create", "jobs-import", "jobs-export",
    ]
    /// The `Retry-After` of a refusal: a reserve is freed by an operator, not by waiting a second.
    static let retryAfterSeconds = 30

    struct Reading: Sendable, Equatable {
        /// Bytes free to the node (`f_bavail`), when the store's directory is visible.
        var freeBytes: Int64?
        /// The store said its disk is full within the last ``reportedFullSeconds``.
        var storeSaidFull = false
    }

    /// How long a full disk the store reported counts as below the reserve.
    static let reportedFullSeconds: UInt64 = 30
    /// When the store last said its disk is full (uptime nanoseconds, 0: never): the vault's.
    private let storeFull = Mutex<(@Sendable () -> UInt64)?>(nil)

    /// Takes the store's own reports of a full disk from `vault` (``Vault/storeReportedFullAt``).
    func listen(to vault: Vault) {
        storeFull.withLock { $0 = { vault.storeReportedFullAt } }
    }

    /// The directory whose file system holds the store (nil: not visible from here).
    private let watched: Mutex<String?>
    var directory: String? { watched.withLock { $0 } }
    private let reading = Mutex(Reading())
    private let timer = RepeatingTimer(label: "cloak.disk-reserve", interval: 1)

    init(directory: String?) {
        watched = Mutex(directory)
    }

    /// Reads `directory` from now on (a PostgreSQL server's data directory, once the store
    /// named it and it is on this machine).
    func watch(_ directory: String) {
        watched.withLock { $0 = directory }
        sample()
    }

    /// The store's directory for `store` (a `sqlite:` URL's file's directory; nil otherwise,
    /// until ``DiskReserve/init(directory:)`` is given a server's data directory).
    static func directory(ofStore store: String) -> String? {
        guard store.hasPrefix("sqlite:") else { return nil }
        let path = String(store.dropFirst("sqlite:".count))
        guard path != ":memory:", !path.isEmpty else { return nil }
        return URL(fileURLWithPath: path).deletingLastPathComponent().path
    }

    /// Bytes free to an unprivileged writer on `directory`'s file system (nil: cannot tell).
    static func freeBytes(_ directory: String) -> Int64? {
        var info = statvfs()
        guard statvfs(directory, &info) == 0 else { return nil }
        return Int64(info.f_bavail) * Int64(info.f_frsize)
    }

    /// Reads the free space now, then once a second until ``stop()``.
    func start() {
        sample()
        timer.start { [weak self] in self?.sample() }
    }

    func stop() { timer.stop() }

    func sample() {
        let free = directory.flatMap { Self.freeBytes($0) }
        let reported = storeFull.withLock { $0 }?() ?? 0
        let saidFull =
            reported != 0
            && DispatchTime.now().uptimeNanoseconds - reported < Self.reportedFullSeconds * 1_000_000_000
        reading.withLock { $0 = Reading(freeBytes: free, storeSaidFull: saidFull) }
    }

    var current: Reading { reading.withLock { $0 } }

    /// Whether the store's disk is below `reserveMiB` (0: no reserve).
    func isBelow(_ reserveMiB: Int) -> Bool {
        guard reserveMiB > 0 else { return false }
        let now = current
        if now.storeSaidFull { return true }
        guard let free = now.freeBytes else { return false }
        return free < Int64(reserveMiB) << 20
    }

    /// The 507 for a request that would grow the store below `reserveMiB`.
    static func refusal(reserveMiB: Int) -> CloakError {
        CloakError(
            .insufficientStorage,
            "the store's disk is below limits.disk_reserve_mib (\(reserveMiB) MiB), the room kept for reveals, "
                + "deletes and their audit events; new values, uploads, imports and exports wait until it is freed",
            extraInfo: [("retryAfterSeconds", .int(retryAfterSeconds))])
    }
}

/// Refuses, below `limits.disk_reserve_mib`, the endpoints that grow the store
/// (``DiskReserve/growsStore``), before their body is read.
struct DiskReserveMiddleware: Middleware {
    let reserve: DiskReserve
    let reserveMiB: Int

    func request(_ context: inout RequestContext) throws(CloakError) -> HTTPResponse? {
        guard let endpoint = context.endpoint, DiskReserve.growsStore.contains(endpoint.name),
            reserve.isBelow(reserveMiB)
        else { return nil }
        throw DiskReserve.refusal(reserveMiB: reserveMiB)
    }
}

extension CloakService {
    /// On PostgreSQL: watches the server's data directory when the server runs on this machine
    /// (a loopback or Unix-socket host) and the node may read that setting and see the path.
    /// Otherwise the node keeps no reserve for it (``DiskReserve``).
    func watchServerDataDirectory() {
        let url = configuration.vault.store
        guard url.hasPrefix("postgres"), let parsed = try? PostgresURL(parsing: url),
            parsed.hosts.allSatisfy({
                $0.name.isEmpty || $0.name.hasPrefix("/") || ["localhost", "127.0.0.1", "::1"].contains($0.name)
            }),
            let vault
        else { return }
        let reserve = state.diskReserve
        vault.withStore(reads: true) { store in
            (store as? PostgreSQLAliasStore)?.dataDirectory()
        } completion: { result in
            guard case let .success(found?) = result, FileManager.default.fileExists(atPath: found) else { return }
            reserve.watch(found)
        }
    }
}
