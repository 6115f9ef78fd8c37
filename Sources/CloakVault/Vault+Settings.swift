extension Vault {
    package struct Settings: Sendable {
        package var environment: String
        package var volatileTTLSeconds: Int
        package var maxBatch: Int
        /// Records remembered by fingerprint so a stored value's alias is answered without the
        /// store (``DedupeCache``); 0: none. Only for a vault that is its store's one writer.
        package var dedupeCacheEntries: Int
        /// How long an anonymous caller's record lives unless kept (`auth.anonymous.intent_ttl_s`);
        /// 0: anonymous records are ordinary records (kept for good when PERSISTENT).
        package var intentTTLSeconds: Int
        /// The share of one small format-preserving bucket (the aliases one value's kept
        /// characters allow) that intents may hold (`auth.anonymous.max_bucket_share`): past it an
        /// anonymous request needing that bucket is refused, so anonymous callers cannot wear out
        /// the aliases of one card's BIN and last four.
        package var maxBucketShare: Double
        /// A store call not answered within it fails as unavailable (`vault.store_timeout_ms`);
        /// nil: no limit.
        package var storeTimeoutMilliseconds: Int? = nil
        /// Where audit events are kept (issue 59); nil: the vault keeps none (tests, commands).
        package var audit: AuditSettings? = nil
        package init(
            environment: String = "sandbox", volatileTTLSeconds: Int = 3600, maxBatch: Int = 100,
            dedupeCacheEntries: Int = 0, intentTTLSeconds: Int = 86_400, maxBucketShare: Double = 0.25
        ) {
            self.intentTTLSeconds = intentTTLSeconds
            self.maxBucketShare = maxBucketShare
            self.environment = environment
            self.volatileTTLSeconds = volatileTTLSeconds
            self.maxBatch = maxBatch
            self.dedupeCacheEntries = dedupeCacheEntries
        }
    }
}
