import CloakCore
import CloakCrypto
import CloakHTTP
import CloakJobs
import Foundation

extension ServiceConfiguration {
    /// Loads and checks a configuration file, then applies `CLOAK_*` overrides from `environment`.
    ///
    /// Keys (every one optional; defaults in parentheses):
    /// - `server.listen` ("127.0.0.1:8080"), `server.threads` (0 = one per core),
    ///   `server.max_body_bytes` (1048576), `server.max_header_bytes` (16384), `server.idle_timeout_s` (30),
    ///   `server.max_connections` (4096), `server.drain_timeout_s` (10), `server.header_timeout_s` (10),
    ///   `server.body_timeout_s` (30), `server.tls.cert`, `server.tls.key`
    /// - `vault.environment` (sandbox), `vault.store` (sqlite:data/cloak.db), `vault.keys` (file:data/keys.json),
    ///   `vault.volatile_ttl_s` (3600), `vault.max_batch` (100), `vault.connections` (2, PostgreSQL only),
    ///   `vault.key_refresh_s` (30: how often a node reads the store's key ring for a rotation)
    /// - `auth.open_tokenize` (true), `auth.tokens[]`: `id`, `sha256` (hex of the token's SHA-256), `scopes`,
    ///   `requests_per_minute`
    /// - `limits.anonymous`, `limits.token`: `requests_per_minute`, `burst`
    /// - `cors.allowed_origins[]`
    /// - `forms.<name>`: `mapping_policy`, `card_brands`, `fields[]` (see `FormSchema+ConfigReader.swift`)
    /// - `routes[]`: `id` (UUID), `path`, `form`, `upstream`, `methods`, `headers`, `connect_timeout_s`,
    ///   `response_timeout_s`, `forward_authorization`, `ca_file`, `request[]`, `response[]`
    /// - `egress`: `listen`, `ca.cert`, `ca.key`, `routes[]` (see `EgressSettings+ConfigReader.swift`)
    ///
    /// Environment: `CLOAK_SERVER_LISTEN`, `CLOAK_SERVER_THREADS`, … — `CLOAK_<SECTION>_<KEY>` in
    /// upper case for every scalar key of `server` and `vault`.
    ///
    /// - Throws: ``ConfigurationError`` listing every problem with its YAML path.
    package static func load(
        path: String, environment: [String: String] = ProcessInfo.processInfo.environment,
        sections: Sections = .all
    )
        throws(ConfigurationError) -> ServiceConfiguration
    {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw ConfigurationError(issues: [ConfigIssue(path: "", message: "cannot read \(path)")])
        }
        return try parse(yaml: text, environment: environment, sections: sections)
    }

    /// What a command reads of the configuration.
    package enum Sections: Sendable {
        /// Everything (`serve`, `check-config`): routes and their step keys, forms, TLS files.
        case all
        /// `vault`, `auth` and `bins` alone (`cloak tokens`, `bins`, `keys`): an operator who
        /// mints a token or imports a BIN table needs the vault, not a provider's HMAC secret or
        /// the HSM a route signs with. The other sections' keys are still checked by name only.
        case administration
        /// What a job command needs (`cloak import`, `export`, `jobs`): the administration's
        /// sections, the forms an import or export names, `limits` and `jobs`. Never a route's
        /// step key: an export needs no provider's secret (review V, item 10).
        case jobs

        static let administrationKeys: Set<String> = ["vault", "auth", "bins"]

        /// The top-level sections read (nil: all).
        var keys: Set<String>? {
            switch self {
            case .all: nil
            case .administration: Self.administrationKeys
            case .jobs: Self.administrationKeys.union(["forms", "limits", "jobs"])
            }
        }
    }

    /// Parses and checks configuration text (see ``load(path:environment:)``).
    package static func parse(
        yaml: String, environment: [String: String] = [:], sections: Sections = .all
    ) throws(ConfigurationError)
        -> ServiceConfiguration
    {
        var root: ConfigNode
        do {
            root = try ConfigNode.parse(yaml: yaml)
        } catch let error as ConfigurationError {
            throw error
        } catch {
            throw ConfigurationError(issues: [ConfigIssue(path: "", message: "not valid YAML: \(error)")])
        }
        for (name, value) in environment.sorted(by: { $0.key < $1.key }) {
            if let path = overridePath(name) { root = root.setting(path, to: value) }
        }
        let reader = ConfigReader()
        reader.environment = environment
        if let keys = sections.keys, case let .mapping(members, line) = root {
            // Unknown top-level keys are still refused by `read`; known ones it does not need go.
            root = .mapping(members.filter { keys.contains($0.key) || !knownKeys.contains($0.key) }, line: line)
        }
        var configuration = read(root, reader)
        configuration.server.refusalBody = JSONWriter.encode(
            CloakError(
                .tooManyConnections, "the server has reached its limit of open connections"
            ).body)
        configuration.server.timeoutRefusalBody = JSONWriter.encode(
            CloakError.malformed(
                "the request head or body did not arrive in time; the connection is closed"
            ).body)
        guard reader.issues.isEmpty else { throw ConfigurationError(issues: reader.issues) }
        return configuration
    }

    static let overridable: [String: [String]] = [
        "server": [
            "listen", "threads", "max_body_bytes", "max_header_bytes", "idle_timeout_s", "max_connections",
            "drain_timeout_s", "header_timeout_s", "body_timeout_s", "max_connections_per_address", "loop_stall_s",
            "trusted_proxies", "proxy_protocol", "forwarded_header", "pid_file",
        ],
        "auth": ["refresh_s"],
        "console": ["listen", "session_idle_s", "session_max_s"],
        "vault": [
            "environment", "store", "keys", "volatile_ttl_s", "max_batch", "connections", "key_refresh_s",
            "store_timeout_ms",
        ],
    ]

    static func overridePath(_ variable: String) -> [String]? {
        guard variable.hasPrefix("CLOAK_") else { return nil }
        let rest = variable.dropFirst("CLOAK_".count).lowercased()
        for (section, keys) in overridable {
            for key in keys where rest == "\(section)_\(key)" { return [section, key] }
        }
        return nil
    }

    /// The top-level keys of a configuration.
    static let knownKeys: Set<String> = [
        "server", "vault", "auth", "limits", "cors", "forms", "routes", "egress", "elements", "telemetry", "bins",
        "audit", "console", "jobs", "policies",
    ]

    private static func read(_ root: ConfigNode, _ r: ConfigReader) -> ServiceConfiguration {
        var config = ServiceConfiguration()
        guard let top = r.mapping(root, at: "", allowed: knownKeys) else { return config }

        if let server = r.mapping(
            top["server"], at: "server",
            allowed: [
                "listen", "threads", "max_body_bytes", "max_header_bytes", "idle_timeout_s", "max_connections",
                "drain_timeout_s", "tls", "header_timeout_s", "body_timeout_s", "max_connections_per_address",
                "loop_stall_s", "trusted_proxies", "proxy_protocol", "forwarded_header", "pid_file",
            ])
        {
            if let path = r.string(server["pid_file"], at: "server.pid_file") {
                if path.isEmpty { r.issue("server.pid_file", "must not be empty", server["pid_file"]) }
                config.pidFile = path
            }
            if let listen = r.string(server["listen"], at: "server.listen") {
                if let (host, port) = parseListen(listen) {
                    config.server.host = host
                    config.server.port = port
                } else {
                    r.issue("server.listen", "expected HOST:PORT, e.g. 127.0.0.1:8080 or [::1]:8080", server["listen"])
                }
            }
            r.int(server["threads"], at: "server.threads", min: 0, max: 256, into: &config, \.server.threads)
            r.int(
                server["max_body_bytes"], at: "server.max_body_bytes", min: 1024, max: 1 << 30, into: &config,
                \.server.maxBodyBytes)
            r.int(
                server["max_header_bytes"], at: "server.max_header_bytes", min: 1024, max: 1 << 20, into: &config,
                \.server.maxHeaderBytes)
            r.int(
                server["idle_timeout_s"], at: "server.idle_timeout_s", min: 1, max: 3600, into: &config,
                \.server.idleTimeoutSeconds)
            r.int(
                server["max_connections"], at: "server.max_connections", min: 1, max: 1_000_000, into: &config,
                \.server.maxConnections)
            r.int(
                server["max_connections_per_address"], at: "server.max_connections_per_address", min: 0, max: 1_000_000,
                into: &config, \.server.maxConnectionsPerAddress)
            r.int(
                server["header_timeout_s"], at: "server.header_timeout_s", min: 1, max: 3600, into: &config,
                \.server.headerTimeoutSeconds)
            r.int(
                server["body_timeout_s"], at: "server.body_timeout_s", min: 1, max: 3600, into: &config,
                \.server.bodyTimeoutSeconds)
            r.double(
                server["drain_timeout_s"], at: "server.drain_timeout_s", min: 0, max: 3600, into: &config,
                \.server.drainTimeoutSeconds)
            r.double(
                server["loop_stall_s"], at: "server.loop_stall_s", min: 1, max: 3600, into: &config, \.loopStallSeconds)
            // A list, or (as CLOAK_SERVER_TRUSTED_PROXIES sets it) one string of comma-separated ranges.
            var proxies: [String]?
            if case let .scalar(text, _) = server["trusted_proxies"] {
                proxies = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter {
                    !$0.isEmpty
                }
            } else {
                proxies = r.strings(server["trusted_proxies"], at: "server.trusted_proxies")
            }
            if let list = proxies {
                var networks: [IPNetwork] = []
                for (i, text) in list.enumerated() {
                    if let network = IPNetwork(text) {
                        networks.append(network)
                    } else {
                        r.issue(
                            "server.trusted_proxies[\(i)]",
                            "expected an address or a CIDR range, e.g. 10.0.0.0/8 or fd00::/8")
                    }
                }
                config.server.trustedProxies = TrustedProxies(networks)
            }
            if let v = r.string(server["forwarded_header"], at: "server.forwarded_header") {
                if let header = ForwardedClient.Header(rawValue: v.lowercased()) {
                    config.server.forwardedHeader = header
                } else {
                    r.issue(
                        "server.forwarded_header", "expected x-forwarded-for or forwarded", server["forwarded_header"])
                }
            }
            if let v = r.bool(server["proxy_protocol"], at: "server.proxy_protocol") {
                config.server.proxyProtocol = v
                if v && config.server.trustedProxies.isEmpty
                    && r.issues.allSatisfy({ !$0.path.hasPrefix("server.trusted_proxies") })
                {
                    r.issue(
                        "server.proxy_protocol",
                        "needs server.trusted_proxies: the PROXY header is taken only from them",
                        server["proxy_protocol"])
                }
            }
            if let tls = r.mapping(server["tls"], at: "server.tls", allowed: ["cert", "key"]), !tls.isEmpty {
                let cert = r.string(tls["cert"], at: "server.tls.cert")
                let key = r.string(tls["key"], at: "server.tls.key")
                if let cert, let key {
                    config.server.tls = (cert, key)
                    for (name, file) in [("cert", cert), ("key", key)]
                    where !FileManager.default.isReadableFile(atPath: file) {
                        r.issue("server.tls.\(name)", "cannot read \(file)", tls[name])
                    }
                } else {
                    r.issue("server.tls", "needs both cert and key", server["tls"])
                }
            }
        }

        if let vault = r.mapping(
            top["vault"], at: "vault",
            allowed: [
                "environment", "store", "keys", "volatile_ttl_s", "max_batch", "connections", "key_refresh_s",
                "store_timeout_ms",
            ])
        {
            if let v = r.string(vault["environment"], at: "vault.environment") {
                if v.range(of: #"^(live|sandbox|LIVE|SANDBOX)+((-)+([a-zA-Z0-9]+)|)+\d*$"#, options: .regularExpression)
                    != nil
                {
                    config.vault.environment = v
                } else {
                    r.issue(
                        "vault.environment", "must be sandbox or live, optionally with -region", vault["environment"])
                }
            }
            if let v = r.string(vault["store"], at: "vault.store") {
                if v.hasPrefix("sqlite:") || v.hasPrefix("postgres://") || v.hasPrefix("postgresql://") {
                    config.vault.store = v
                } else {
                    r.issue("vault.store", "expected sqlite:PATH or postgres://…", vault["store"])
                }
            }
            if let v = r.string(vault["keys"], at: "vault.keys") {
                do {
                    _ = try KeySource(v)
                    config.vault.keys = v
                } catch {
                    r.issue("vault.keys", error.description, vault["keys"])
                }
            }
            r.int(
                vault["volatile_ttl_s"], at: "vault.volatile_ttl_s", min: 1, max: 31_536_000, into: &config,
                \.vault.volatileTTLSeconds)
            r.int(vault["max_batch"], at: "vault.max_batch", min: 1, max: 10_000, into: &config, \.vault.maxBatch)
            r.int(vault["connections"], at: "vault.connections", min: 1, max: 64, into: &config, \.vault.connections)
            r.int(
                vault["key_refresh_s"], at: "vault.key_refresh_s", min: 1, max: 86_400, into: &config,
                \.vault.keyRefreshSeconds)
            r.int(
                vault["store_timeout_ms"], at: "vault.store_timeout_ms", min: 100, max: 600_000, into: &config,
                \.vault.storeTimeoutMilliseconds)
        }

        readPolicies(top["policies"], into: &config, r)
        readAuth(top["auth"], into: &config, r)
        compilePolicies(into: &config, r)
        readLimits(top["limits"], into: &config, r)
        readTelemetry(top["telemetry"], into: &config, r)

        if let cors = r.mapping(top["cors"], at: "cors", allowed: ["allowed_origins"]) {
            config.corsAllowedOrigins = r.strings(cors["allowed_origins"], at: "cors.allowed_origins") ?? []
        }

        for (name, node) in r.namedMapping(top["forms"], at: "forms") {
            if let form = FormSchema.read(name: name, node, at: "forms.\(name)", r) {
                form.checkAliasCoverage(at: "forms.\(name)", openTokenize: config.openTokenize, r)
                config.forms[name] = form
            }
        }

        if let routes = r.sequence(top["routes"], at: "routes") {
            config.routes = routes.enumerated().compactMap { i, node in
                Route.readInbound(node, at: "routes[\(i)]", forms: config.forms, r)
            }
            var seen = Set<String>()
            for (i, route) in config.routes.enumerated() where !seen.insert(route.id.lowercased()).inserted {
                r.issue("routes[\(i)].id", "duplicate route id")
            }
            for (i, route) in config.routes.enumerated()
            where !config.openTokenize && route.form != nil && route.forwardAuthorization {
                r.issue(
                    "routes[\(i)].forward_authorization",
                    "with auth.open_tokenize false, Authorization carries the Cloak token: it must not go upstream")
            }
        }
        config.egress = EgressSettings.read(top["egress"], r)
        if let audit = r.mapping(top["audit"], at: "audit", allowed: ["retention_days"]) {
            // At least a year: PCI DSS 10.5.1 keeps audit history for twelve months.
            r.int(
                audit["retention_days"], at: "audit.retention_days", min: 365, max: 36_500, into: &config,
                \.auditRetentionDays)
        }
        config.console = ConsoleSettings.read(top["console"], hasTLS: config.server.tls != nil, r)
        if let jobs = r.mapping(
            top["jobs"], at: "jobs",
            allowed: ["output_ttl_s", "lease_s", "max_input_mib", "gnupg_home", "approval_ttl_s", "max_open_per_token"])
        {
            if let home = r.string(jobs["gnupg_home"], at: "jobs.gnupg_home") { config.jobs.gnupgHome = home }
            r.int(
                jobs["max_input_mib"], at: "jobs.max_input_mib", min: 1, max: 1 << 20, into: &config, \.jobs.maxInputMiB
            )
            r.int(
                jobs["output_ttl_s"], at: "jobs.output_ttl_s", min: 60, max: 90 * 86_400, into: &config,
                \.jobs.outputTTLSeconds)
            r.int(jobs["lease_s"], at: "jobs.lease_s", min: 5, max: 3_600, into: &config, \.jobs.leaseSeconds)
            r.int(
                jobs["approval_ttl_s"], at: "jobs.approval_ttl_s", min: 60, max: 30 * 86_400, into: &config,
                \.jobs.approvalTTLSeconds)
            r.int(
                jobs["max_open_per_token"], at: "jobs.max_open_per_token", min: 1, max: 1_000, into: &config,
                \.jobs.maxOpenPerToken)
        }
        if let bins = r.mapping(top["bins"], at: "bins", allowed: ["refresh_s"]) {
            r.int(bins["refresh_s"], at: "bins.refresh_s", min: 1, max: 3600, into: &config, \.binsRefreshSeconds)
        }
        if let elements = r.mapping(
            top["elements"], at: "elements", allowed: ["allowed_origins", "font_origins", "native"])
        {
            r.bool(elements["native"], at: "elements.native", into: &config, \.elements.native)
            for key in ["allowed_origins", "font_origins"] {
                let origins = r.strings(elements[key], at: "elements.\(key)") ?? []
                for (i, origin) in origins.enumerated() {
                    if let problem = ElementsSettings.originProblem(origin) {
                        r.issue("elements.\(key)[\(i)]", problem)
                    }
                }
                if key == "allowed_origins" {
                    config.elements.allowedOrigins = origins
                } else {
                    config.elements.fontOrigins = origins
                }
            }
        }
        return config
    }
}
