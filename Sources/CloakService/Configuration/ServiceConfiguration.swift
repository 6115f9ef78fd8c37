import CloakCore
import CloakHTTP
import CloakJobs

/// Everything `cloak serve` runs with, loaded from YAML (SPEC §2) and `CLOAK_*` variables.
package struct ServiceConfiguration: Sendable {
    package var server: HTTPServerConfiguration
    package var vault: VaultSettings
    package var auth: [AccessToken]
    package var corsAllowedOrigins: [String]
    package var forms: [String: FormSchema]
    /// `routes`: inbound routes under `/proxy`.
    package var routes: [Route]
    /// `auth.open_tokenize`: whether endpoints that store values take callers without a token
    /// (the SDK's tokenize call is open). When false they need a token with `aliases:create`.
    package var openTokenize = true
    /// `auth.refresh_s`: how often a node reads the store's API credentials (a token created or
    /// revoked on another node, or by `cloak tokens`, takes effect within it).
    package var authRefreshSeconds = 5
    /// How often a node reads the store's BIN table header (`bins.refresh_s`).
    package var binsRefreshSeconds = 30
    /// Bulk jobs (issue 60): how long a finished job's outputs are kept, and the lease a node
    /// running a job renews with each batch (another node takes the job once it lapses).
    package var jobs = JobSettings()
    /// `audit.retention_days`: audit events older than this are swept (at least 365).
    package var auditRetentionDays = 400
    /// `limits`: request rates per client address (no token) and per token.
    package var limits = RateLimits()
    /// `egress`: routes that reveal aliases on the way out, and the forward-proxy door.
    package var egress = EgressSettings()
    /// `server.loop_stall_s`: `/readyz` answers 503 when any event loop (main listener or egress
    /// door) has not turned for this long.
    package var loopStallSeconds: Double = 5
    /// `server.pid_file`: where `cloak serve` writes its process id (`cloak reload` signals it).
    package var pidFile: String?
    /// `telemetry.traces` (nil: no tracing).
    package var traces: TraceSettings?
    /// `elements`: the pages that may embed Cloak Elements (none by default).
    package var elements = ElementsSettings()
    /// `console`: the operator console's listener and sessions (off by default).
    package var console = ConsoleSettings()
    /// `policies[]` (issue 77), by id: what a token that names them may see of each value.
    var policies: [String: AccessPolicy] = [:]

    /// Settings that are valid but that an operator should know the price of (`check-config`
    /// prints them).
    package var warnings: [String] {
        var out: [String] = []
        if vault.intentTTLSeconds == 0 && openTokenize {
            out.append(
                "auth.anonymous.intent_ttl_s is 0: what anonymous callers store is kept for good (the store grows, "
                    + "and anonymous requests can fill a card's alias bucket)")
        }
        if let listen = console.listen, console.elementsOrigin != nil {
            let own = (server.tls != nil ? "https://" : "http://") + "\(listen.host):\(listen.port)"
            if !elements.allowedOrigins.contains(own) {
                out.append(
                    "console.elements_origin is set but elements.allowed_origins does not name the console (\(own)): "
                        + "the forms page's preview frames will not load there")
            }
        }
        return out
    }

    package init(
        server: HTTPServerConfiguration = .init(), vault: VaultSettings = .init(),
        auth: [AccessToken] = [], corsAllowedOrigins: [String] = [], forms: [String: FormSchema] = [:],
        routes: [Route] = []
    ) {
        self.server = server
        self.vault = vault
        self.auth = auth
        self.corsAllowedOrigins = corsAllowedOrigins
        self.forms = forms
        self.routes = routes
    }

    /// The vault's settings (used by the tokenization endpoints).
    package struct VaultSettings: Sendable {
        /// `sandbox` or `live`; part of every UUID alias (`tok_<environment>_…`).
        package var environment: String = "sandbox"
        /// `sqlite:PATH` or `postgres://…`.
        package var store: String = "sqlite:data/cloak.db"
        /// `file:PATH`, `env:NAME` or a `pkcs11:` URI (``KeySource``).
        package var keys: String = "file:data/keys.json"
        /// How often (seconds) a node reads the store's key ring to pick up a rotation.
        package var keyRefreshSeconds: Int = 30
        /// `vault.store_timeout_ms`: a shared store's call not answered within it is a 503 (and
        /// `/readyz` fails), so a failover never hangs a request.
        package var storeTimeoutMilliseconds: Int = 2000
        package var volatileTTLSeconds: Int = 3600
        package var maxBatch: Int = 100
        /// Connections (each with its own vault thread) to a PostgreSQL store; SQLite uses one.
        /// Two: with one round trip per group commit, more threads split the same load into
        /// smaller batches, each paying PostgreSQL's fixed cost of a statement and a commit
        /// (Benchmarks/README.md: PostgreSQL's CPU per new alias 73 µs at two, 103 at four).
        package var connections: Int = 2
        /// `auth.anonymous.intent_ttl_s`: how long an anonymous caller's record lives unless a
        /// backend keeps it (`POST /aliases/keep`); 0: for good (VGS migrations).
        package var intentTTLSeconds: Int = 86_400
        /// `auth.anonymous.max_bucket_share`: the share of one small format-preserving bucket
        /// that anonymous intents may hold.
        package var maxBucketShare: Double = 0.25
        package init() {}
    }

    /// A bearer token: only the SHA-256 of the secret is configured.
    package struct AccessToken: Sendable {
        package var id: String
        package var sha256: [UInt8]
        package var scopes: Set<Scope>
        /// Overrides `limits.token.requests_per_minute` for this token.
        package var requestsPerMinute: Int?
        /// Overrides `limits.bucket_values_per_hour` for this token (a migration that imports
        /// many cards of one BIN and last four), for its creates and its lookups alike.
        package var bucketValuesPerHour: Int?
        /// Where it is kept: `auth.tokens` of the YAML, or the store (``APICredentials``).
        package var source: Source = .yaml
        /// Unix seconds; store tokens only.
        package var createdAt: Int64?
        /// Unix seconds after which the token is refused; nil: never.
        package var expiresAt: Int64?
        /// The token whose guess windows this one shares (``BucketGuessLimiter``): for a token
        /// minted through `/admin/tokens`, the root of the chain that minted it, so one admin
        /// credential cannot multiply its guesses by minting tokens; nil: its own.
        package var guessAccount: String?
        /// The token that minted this one through `/admin/tokens` (store tokens only; nil: made
        /// by an operator with `cloak tokens`). A minted token holds while its minter does, with
        /// the secret it had then (``minterTag``), and revoking the minter revokes it
        /// (``TokenDirectory``, ``CredentialAdministration/revoke(id:now:by:mayRevoke:)``).
        package var mintedBy: String?
        /// ``CredentialSeal/minterTag(_:)`` of the minter's SHA-256 when it minted this token.
        package var minterTag: [UInt8]?
        /// The person the token acts for (`auth.tokens[].person`, `cloak tokens create --person`;
        /// a minted token is its minter's): export jobs are approved by another person than the
        /// one who asked (``ExportDuties``).
        package var person: String?
        /// `auth.tokens[].policies` (issue 77): the policies that narrow what its scopes let it
        /// see; empty: its scopes alone decide, as before policies.
        package var policies: [String] = []
        /// ``policies`` compiled once a load (``TokenAccess``); a minted token's are those of the
        /// configured token its chain starts from (``TokenDirectory``).
        var access = TokenAccess.unrestricted

        /// Whether access policies narrow this token (for the commands, which judge none yet).
        package var isHeldToPolicies: Bool { access.isRestricted }

        /// Who this token's guesses count as.
        package var guessKey: String { guessAccount ?? id }

        package enum Source: String, Sendable { case yaml, store }

        package init(
            id: String, sha256: [UInt8], scopes: Set<Scope>, requestsPerMinute: Int? = nil,
            bucketValuesPerHour: Int? = nil
        ) {
            self.id = id
            self.sha256 = sha256
            self.scopes = scopes
            self.requestsPerMinute = requestsPerMinute
            self.bucketValuesPerHour = bucketValuesPerHour
        }

        /// Whether the token has expired at `now` (Unix seconds).
        package func hasExpired(at now: Int64) -> Bool { expiresAt.map { now >= $0 } ?? false }

        /// The distinct values of one guess bucket this token may alias in an hour; nil for no
        /// limit. A token that may reveal gains nothing by aliasing candidates (it can reveal
        /// the alias it holds), so only its own override limits its creates.
        package func createBucketLimit(default limit: Int) -> Int? {
            bucketValuesPerHour ?? (scopes.contains(.aliasesReveal) ? nil : limit)
        }

        /// The distinct values of one guess bucket this token may look up, not finding them, in
        /// an hour: every token, reveal holders included (a lookup of a value the caller does
        /// not know is a guess).
        package func lookupBucketLimit(default limit: Int) -> Int { bucketValuesPerHour ?? limit }
    }

    /// `limits`: a token bucket per client address and per token.
    package struct RateLimits: Sendable {
        package var anonymous = RateLimit(requestsPerMinute: 600, burst: 60)
        package var token = RateLimit(requestsPerMinute: 6000, burst: 600)
        /// Distinct values of one format-preserving bucket (a card's BIN, last four and length)
        /// one token may alias in a sliding hour (``BucketGuessLimiter``).
        package var bucketValuesPerHour = 30
        /// Memory all guess accounts' windows may hold on a node (``BucketGuessLimiter``): past
        /// it a value that needs more is refused with the bucket cap's 429.
        package var guessMemoryMiB = 512
        /// Rows an import job takes an hour on a node (issue 60): a rate, so that a migration
        /// leaves the node room to serve. At least one a second (a job's lease is renewed by
        /// each batch it commits).
        package var importRowsPerHour = 36_000_000
        /// MiB of uploads (bodies of forms with files) per minute, per client address and per
        /// token, charged when an upload begins (``UploadAdmission``).
        package var uploadMiBPerMinute = 120
        /// Memory all uploads in flight may hold on a node: past it a new upload is answered
        /// 503 with `Retry-After` before its body is read.
        package var uploadMemoryMiB = 256
        /// Free space the store's disk keeps for reveals, deletes and their audit events: below
        /// it, what grows the store is refused with 507 (``DiskReserve``); 0 keeps none.
        package var diskReserveMiB = 256
        package init() {}
    }
}
