public import CloakCore
public import CloakHTTP

/// Everything `cloak serve` runs with, loaded from YAML (SPEC §2) and `CLOAK_*` variables.
public struct ServiceConfiguration: Sendable {
    public var server: HTTPServerConfiguration
    public var vault: VaultSettings
    public var auth: [AccessToken]
    public var corsAllowedOrigins: [String]
    public var forms: [String: FormSchema]
    public var routes: [RouteSettings]
    /// `auth.open_tokenize`: whether endpoints that store values take callers without a token
    /// (the SDK's tokenize call is open). When false they need a token with `aliases:create`.
    public var openTokenize = true
    /// `limits`: request rates per client address (no token) and per token.
    public var limits = RateLimits()
    /// `egress`: routes that reveal aliases on the way out, and the forward-proxy door.
    public var egress = EgressSettings()
    /// `server.loop_stall_s`: `/readyz` answers 503 when any event loop (main listener or egress
    /// door) has not turned for this long.
    public var loopStallSeconds: Double = 5
    /// `elements`: the pages that may embed Cloak Elements (none by default).
    public var elements = ElementsSettings()

    /// Settings that are valid but that an operator should know the price of (`check-config`
    /// prints them).
    public var warnings: [String] {
        var out: [String] = []
        if vault.intentTTLSeconds == 0 && openTokenize {
            out.append("auth.anonymous.intent_ttl_s is 0: what anonymous callers store is kept for good (the store grows, "
                       + "and anonymous requests can fill a card's alias bucket)")
        }
        return out
    }

    public init(
        server: HTTPServerConfiguration = .init(), vault: VaultSettings = .init(),
        auth: [AccessToken] = [], corsAllowedOrigins: [String] = [], forms: [String: FormSchema] = [:],
        routes: [RouteSettings] = []
    ) {
        self.server = server
        self.vault = vault
        self.auth = auth
        self.corsAllowedOrigins = corsAllowedOrigins
        self.forms = forms
        self.routes = routes
    }

    /// The vault's settings (used by the tokenization endpoints).
    public struct VaultSettings: Sendable {
        /// `sandbox` or `live`; part of every UUID alias (`tok_<environment>_…`).
        public var environment: String = "sandbox"
        /// `sqlite:PATH` or `postgres://…`.
        public var store: String = "sqlite:data/cloak.db"
        /// `file:PATH` or `env:CLOAK_MASTER_KEY`.
        public var keys: String = "file:data/keys.json"
        public var volatileTTLSeconds: Int = 3600
        public var maxBatch: Int = 100
        /// Connections (each with its own vault thread) to a PostgreSQL store; SQLite uses one.
        public var connections: Int = 4
        /// `auth.anonymous.intent_ttl_s`: how long an anonymous caller's record lives unless a
        /// backend keeps it (`POST /aliases/keep`); 0: for good (VGS migrations).
        public var intentTTLSeconds: Int = 86_400
        /// `auth.anonymous.max_bucket_share`: the share of one small format-preserving bucket
        /// that anonymous intents may hold.
        public var maxBucketShare: Double = 0.25
        public init() {}
    }

    /// A bearer token: only the SHA-256 of the secret is configured.
    public struct AccessToken: Sendable {
        public var id: String
        public var sha256: [UInt8]
        public var scopes: Set<String>
        /// Overrides `limits.token.requests_per_minute` for this token.
        public var requestsPerMinute: Int?

        public init(id: String, sha256: [UInt8], scopes: Set<String>, requestsPerMinute: Int? = nil) {
            self.id = id
            self.sha256 = sha256
            self.scopes = scopes
            self.requestsPerMinute = requestsPerMinute
        }
    }

    /// `limits`: a token bucket per client address and per token.
    public struct RateLimits: Sendable {
        public var anonymous = RateLimit(requestsPerMinute: 600, burst: 60)
        public var token = RateLimit(requestsPerMinute: 6000, burst: 600)
        /// Distinct values of one format-preserving bucket (a card's BIN, last four and length)
        /// one token may alias in a sliding hour (``BucketGuessLimiter``).
        public var bucketValuesPerHour = 30
        public init() {}
    }

    /// A proxy route (SPEC §2, `routes:`).
    public struct RouteSettings: Sendable {
        public var id: String
        public var path: String
        public var form: String?
        public var upstream: String
        public var methods: [String]
        public var headers: [(name: String, value: String)]
        public var connectTimeoutSeconds: Double
        public var responseTimeoutSeconds: Double
        public var forwardAuthorization: Bool
        /// PEM file of CAs trusted for an https upstream; nil: the system store.
        public var caFile: String?
        /// `request:` operations on the client's message (instead of `form`).
        public var requestOperations: [RouteOperation] = []
        /// `response:` operations on the upstream's answer before the client sees it.
        public var responseOperations: [RouteOperation] = []
    }

    /// One operation of a route on a message: `redact` aliases the values its selectors pick (in
    /// `format` and `storage`); `reveal` puts back the values of the aliases they pick.
    public struct RouteOperation: Sendable {
        public enum Action: String, Sendable { case redact, reveal }
        public var action: Action = .redact
        public var format: AliasFormatName
        public var storage: TokenizationSettings.Storage
        public var json: [JSONPath]
        public var form: [String]
        public var header: [String]
    }

    public static let knownScopes: Set<String> = ["aliases:create", "aliases:reveal", "aliases:update", "aliases:delete", "egress:*"]

    /// Whether `scope` is one Cloak knows: a fixed one or `egress:<route id>`.
    static func isKnownScope(_ scope: String) -> Bool {
        knownScopes.contains(scope) || (scope.hasPrefix("egress:") && EgressSettings.isRouteID(String(scope.dropFirst(7))))
    }
}
