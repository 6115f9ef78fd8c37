import CloakCore
import CloakCrypto
import CloakHTTP
import CloakVault
import Foundation
import Logging
import Synchronization
import Tracing

/// What a service keeps across reloads of its configuration (``ServiceHost``): the vault, the
/// counts of the rate and guess limits, the metrics, the loops' watchdog, the token directory
/// and its refresh, the signing keys. Everything else a ``CloakService`` derives from its
/// configuration, once, and a reload makes a new one on the same state.
final class ServiceState: Sendable {
    let vault: Vault?
    let metrics: ServiceMetrics
    let egressMetrics: EgressMetrics
    /// The request rates' buckets (each generation brings its own `limits`).
    let limiter = RateLimiter()
    let guessLimiter = BucketGuessLimiter()
    /// Uploads' memory and MiB buckets (``UploadAdmission``).
    let uploads = UploadAdmission()
    /// The store's free space against `limits.disk_reserve_mib` (``DiskReserve``).
    let diskReserve: DiskReserve
    let watchdog = LoopWatchdog()
    /// Imports' refusals by reason, counted off the vault's thread (``JobRefusals``).
    let refusalTallies = JobRefusals()
    let isDraining = Atomic<Bool>(false)
    /// The port the console's listener is bound to (0 until it is): its `Host` check's.
    let consolePort = Atomic<Int>(0)
    /// Unix seconds of the start (the console's overview: uptime).
    let startedAt = Int64(Date().timeIntervalSince1970)
    /// The YAML's tokens (replaced by a reload) and the store's (``CredentialRefresh``).
    let directory: TokenDirectory
    let credentialRefresh: CredentialRefresh?
    /// The BIN table this node serves (``BinTableRefresh``; nil without a vault).
    let binRefresh: BinTableRefresh?
    /// Refused credentials, audited as counts a minute (``RefusalTally``).
    let refusals: RefusalTally
    let elementsSessionKey: HMACKey?
    /// The key page's record counts, at most a minute old (``AdminKeysHandler``).
    let keyCounts = AdminKeysHandler.Counts()
    /// The console's signed-in sessions (``ConsoleSessions``; `console.*` needs a restart).
    let consoleSessions: ConsoleSessions
    let egressCA: CertificateAuthority?
    let logSink: LogSink
    let logger: Logger
    let today: @Sendable () -> CalendarDate
    /// Starts the spans of `telemetry.traces` (nil: tracing is off).
    let tracer: CloakTracer?

    init(
        configuration: ServiceConfiguration, vault: Vault?, logSink: @escaping LogSink,
        today: @escaping @Sendable () -> CalendarDate, egressCA: CertificateAuthority?, traces: TraceExport?
    ) {
        self.tracer = traces?.tracer
        self.diskReserve = DiskReserve(directory: DiskReserve.directory(ofStore: configuration.vault.store))
        self.metrics = ServiceMetrics(traces: traces)
        self.vault = vault
        self.egressMetrics = EgressMetrics(registry: metrics.registry)
        let directory = TokenDirectory(yaml: configuration.auth, seal: vault.map { CredentialSeal(vault: $0) })
        self.directory = directory
        let logger = Logger(label: "cloak") { label in JSONLogHandler(label: label, sink: logSink) }
        self.logger = logger
        self.logSink = logSink
        self.today = today
        self.egressCA = egressCA
        self.elementsSessionKey = vault?.derivedMAC(purpose: "elements-session")
        self.consoleSessions = ConsoleSessions(
            idleSeconds: configuration.console.sessionIdleSeconds, maxSeconds: configuration.console.sessionMaxSeconds)
        self.credentialRefresh = vault.map {
            CredentialRefresh(
                vault: $0, directory: directory, interval: configuration.authRefreshSeconds, logger: logger)
        }
        self.refusals = RefusalTally(log: AuditLog(logger: logger, vault: vault))
        self.binRefresh = vault.map {
            BinTableRefresh(vault: $0, interval: configuration.binsRefreshSeconds, logger: logger)
        }
    }
}
