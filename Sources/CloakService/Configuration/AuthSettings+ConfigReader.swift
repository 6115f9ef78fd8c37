import CloakCrypto

extension ServiceConfiguration {
    /// `auth`: `open_tokenize`, `refresh_s` and `tokens[]` (`id`, `sha256`, `scopes`, `requests_per_minute`,
    /// `bucket_values_per_hour`, `person`, `policies`).
    static func readAuth(_ node: ConfigNode?, into config: inout ServiceConfiguration, _ r: ConfigReader) {
        guard let auth = r.mapping(node, at: "auth", allowed: ["tokens", "open_tokenize", "anonymous", "refresh_s"])
        else { return }
        r.int(auth["refresh_s"], at: "auth.refresh_s", min: 1, max: 3600, into: &config, \.authRefreshSeconds)
        if let v = auth["open_tokenize"].flatMap({ r.bool($0, at: "auth.open_tokenize") }) { config.openTokenize = v }
        if let anonymous = r.mapping(
            auth["anonymous"], at: "auth.anonymous", allowed: ["intent_ttl_s", "max_bucket_share"])
        {
            r.int(
                anonymous["intent_ttl_s"], at: "auth.anonymous.intent_ttl_s", min: 0, max: 315_360_000, into: &config,
                \.vault.intentTTLSeconds)
            r.double(
                anonymous["max_bucket_share"], at: "auth.anonymous.max_bucket_share", min: 0.000001, max: 1,
                into: &config, \.vault.maxBucketShare)
        }
        guard let tokens = r.sequence(auth["tokens"], at: "auth.tokens") else { return }
        var ids = Set<String>()
        // Each secret once: two entries with one digest would be one token under two ids, its
        // scopes those of whichever came first (the message names the other entry, never the digest).
        var digests: [[UInt8]: Int] = [:]
        for (i, node) in tokens.enumerated() {
            let p = "auth.tokens[\(i)]"
            guard
                let t = r.mapping(
                    node, at: p,
                    allowed: [
                        "id", "sha256", "scopes", "requests_per_minute", "bucket_values_per_hour", "person", "policies",
                    ])
            else {
                continue
            }
            let id = r.string(t["id"], at: "\(p).id")
            if id == nil { r.issue("\(p).id", "is required", node) }
            if let id, !ids.insert(id).inserted { r.issue("\(p).id", "duplicate token id", node) }
            if let id, TokenID.looksLikeAValue(id) {
                r.issue(
                    "\(p).id", "must not be all digits nor hold nine digits in a row (ids are logged as they are)", node
                )
            }
            var digest: [UInt8]?
            if let hex = r.string(t["sha256"], at: "\(p).sha256") {
                digest = decodeHex(hex)
                if digest?.count != 32 { r.issue("\(p).sha256", "expected 64 hexadecimal characters", t["sha256"]) }
                if let digest, digest.count == 32 {
                    if let first = digests[digest] {
                        r.issue(
                            "\(p).sha256", "the same secret as auth.tokens[\(first)]: give each token its own",
                            t["sha256"])
                    } else {
                        digests[digest] = i
                    }
                }
            } else {
                r.issue("\(p).sha256", "is required", node)
            }
            var scopes: Set<Scope> = []
            for (j, text) in (r.strings(t["scopes"], at: "\(p).scopes") ?? []).enumerated() {
                guard let scope = Scope(parsing: text) else {
                    let known = Scope.known.map(\.text).sorted().joined(separator: ", ")
                    r.issue("\(p).scopes[\(j)]", "unknown scope (expected one of: \(known) or egress:<route id>)")
                    continue
                }
                scopes.insert(scope)
            }
            let perMinute = r.int(
                t["requests_per_minute"], at: "\(p).requests_per_minute", min: 1, max: RateLimit.maxPerMinute)
            let bucketLimit = r.int(
                t["bucket_values_per_hour"], at: "\(p).bucket_values_per_hour", min: 1, max: 1_000_000)
            let person = r.string(t["person"], at: "\(p).person")
            if let person, !ExportDuties.isValidPerson(person) {
                r.issue("\(p).person", "expected 1 to 64 of A-Z a-z 0-9 . _ - @ +", t["person"])
            }
            if let violation = ExportDuties.violation(scopes: scopes, person: person) {
                r.issue("\(p).scopes", violation, t["scopes"])
            }
            if let id, let digest, digest.count == 32 {
                var token = AccessToken(
                    id: id, sha256: digest, scopes: scopes, requestsPerMinute: perMinute,
                    bucketValuesPerHour: bucketLimit)
                token.person = person
                token.policies = r.strings(t["policies"], at: "\(p).policies") ?? []
                config.auth.append(token)
            }
        }
    }

    /// `limits.anonymous` and `limits.token`: `{requests_per_minute, burst}`; the guess bucket's
    /// `bucket_values_per_hour` and `guess_memory_mib`; uploads' `upload_mib_per_minute` and `upload_memory_mib`.
    static func readLimits(_ node: ConfigNode?, into config: inout ServiceConfiguration, _ r: ConfigReader) {
        guard
            let limits = r.mapping(
                node, at: "limits",
                allowed: [
                    "anonymous", "token", "bucket_values_per_hour", "guess_memory_mib", "upload_mib_per_minute",
                    "upload_memory_mib", "import_rows_per_hour", "disk_reserve_mib",
                ])
        else { return }
        func read(_ key: String, _ defaults: RateLimit) -> RateLimit {
            let p = "limits.\(key)"
            guard let m = r.mapping(limits[key], at: p, allowed: ["requests_per_minute", "burst"]) else {
                return defaults
            }
            var limit = defaults
            r.int(
                m["requests_per_minute"], at: "\(p).requests_per_minute", min: 1, max: RateLimit.maxPerMinute,
                into: &limit, \.requestsPerMinute)
            r.int(m["burst"], at: "\(p).burst", min: 1, max: RateLimit.maxPerMinute, into: &limit, \.burst)
            return limit
        }
        config.limits.anonymous = read("anonymous", config.limits.anonymous)
        config.limits.token = read("token", config.limits.token)
        r.int(
            limits["bucket_values_per_hour"], at: "limits.bucket_values_per_hour", min: 1, max: 1_000_000,
            into: &config, \.limits.bucketValuesPerHour)
        r.int(
            limits["import_rows_per_hour"], at: "limits.import_rows_per_hour", min: 3_600, max: 1_000_000_000,
            into: &config, \.limits.importRowsPerHour)
        r.int(
            limits["guess_memory_mib"], at: "limits.guess_memory_mib", min: 1, max: 1 << 20,
            into: &config, \.limits.guessMemoryMiB)
        r.int(
            limits["upload_mib_per_minute"], at: "limits.upload_mib_per_minute", min: 1, max: 1 << 20,
            into: &config, \.limits.uploadMiBPerMinute)
        r.int(
            limits["upload_memory_mib"], at: "limits.upload_memory_mib", min: 2, max: 1 << 20,
            into: &config, \.limits.uploadMemoryMiB)
        r.int(
            limits["disk_reserve_mib"], at: "limits.disk_reserve_mib", min: 0, max: 1 << 20,
            into: &config, \.limits.diskReserveMiB)
    }
}
