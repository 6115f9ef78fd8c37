import CloakCore
import CloakHTTP
import CloakVault
import Dispatch
import Logging
import Synchronization

/// Keeps a node's ``TokenDirectory`` in step with the store's API credentials: every
/// `auth.refresh_s` it reads the document on a vault thread (and hands the store this node's
/// marks of use), and adopts it when it verifies (``CredentialSeal``) and goes forward
/// (``APICredentials/serial``): ``judge(_:held:seal:)``.
///
/// Every adoption is an audit line (`tokens_adopt`: the ids added, removed and replaced, the
/// serials, and `origin`: `this_node` for a change this node made through `/admin/tokens`,
/// `store` for one made elsewhere: another node or `cloak tokens`). A document that is refused
/// (unsigned, forged, damaged, deleted, or older than the one held) is logged once, with what
/// to do, and the node keeps the tokens it holds; when it holds a document it writes that back
/// in place of the refused one (byte for byte, compare-and-set: it needs no key and cannot
/// lower the serial), so a replayed or forged document does not outlive a running node's next
/// refresh, and nodes that start later find the good one. Nodes holding different documents
/// converge on the latest: each puts back only a document older than its own.
package final class CredentialRefresh: Sendable {
    let vault: Vault
    let directory: TokenDirectory
    let seal: CredentialSeal
    let interval: Int
    let logger: Logger
    private let audit: AuditLog
    private let state = Mutex<State>(State())
    /// The marks of use already handed to the store.
    private let flushed = Mutex<[String: Int64]>([:])
    private let timer: RepeatingTimer

    private struct State: Sendable {
        var held = Held()
        /// The document last refused ([] for none at all), so a refusal is logged once.
        var refused: [UInt8]?
        /// The serials of documents this node wrote (its `/admin/tokens` changes), until adopted.
        var own: Set<Int64> = []
    }

    init(vault: Vault, directory: TokenDirectory, interval: Int, logger: Logger) {
        self.vault = vault
        self.directory = directory
        self.seal = directory.seal ?? CredentialSeal(vault: vault)
        self.interval = interval
        self.logger = logger
        self.audit = AuditLog(logger: logger, vault: vault)
        self.timer = RepeatingTimer(label: "cloak.credential-refresh", interval: interval)
    }

    package func start() { timer.start { [weak self] in self?.refreshNow() } }

    package func stop() { timer.stop() }

    deinit { stop() }

    /// Reads the store's credentials once (after handing it this node's new marks of use) and
    /// adopts them when they verify and go forward; `done` runs after (and after a refused
    /// document was replaced by the one this node holds).
    /// - Parameter own: the serial of a document this node just wrote (its adoption says so).
    func refreshNow(own: Int64? = nil, done: (@Sendable () -> Void)? = nil) {
        if let own { state.withLock { _ = $0.own.insert(own) } }
        let storeIDs = Set(directory.all.filter { $0.source == .store }.map(\.id))
        let seen = directory.lastUsed.filter { storeIDs.contains($0.key) }
        let used = flushed.withLock { flushed in seen.filter { flushed[$0.key] != $0.value } }
        let seal = self.seal
        vault.withStore(reads: used.isEmpty) { store in
            if !used.isEmpty { try CredentialAdministration(store: store, yamlIDs: [], seal: seal).recordUse(used) }
            return try store.metadata(APICredentials.storeName)
        } completion: { [self] result in
            switch result {
            case let .success(bytes):
                flushed.withLock { for (id, t) in used { $0[id] = t } }
                consider(bytes, done: done)
            case let .failure(error):
                logger.warning(
                    "cannot read the store's API credentials; keeping the current ones",
                    metadata: ["reason": .string("\(error)")])
                done?()
            }
        }
    }

    /// One reading for requests that presented an unknown bearer token (``Door``): they share a
    /// reading under way; otherwise one starts, at most once a second (an attacker sending made-up
    /// tokens gets one store read a second, not one a request). `then` runs after the reading;
    /// false (and `then` never runs) when none will happen.
    func refreshForUnknown(then: @escaping @Sendable () -> Void) -> Bool {
        let now = DispatchTime.now().uptimeNanoseconds
        let start = unknown.withLock { u -> Bool? in
            if u.reading {
                guard u.waiting.count < Self.maxWaiting else { return nil }
                u.waiting.append(then)
                return false
            }
            if let last = u.lastStart, now &- last < Self.unknownGapNanoseconds { return nil }
            u.reading = true
            u.lastStart = now
            u.waiting = [then]
            return true
        }
        guard let start else { return false }
        if start {
            refreshNow { [self] in
                let waiting = unknown.withLock { u in
                    defer {
                        u.reading = false
                        u.waiting = []
                    }
                    return u.waiting
                }
                for then in waiting { then() }
            }
        }
        return true
    }

    /// Readings for unknown tokens: whether one is under way, who waits for it, when the last began.
    private struct UnknownReading: Sendable {
        var reading = false
        var waiting: [@Sendable () -> Void] = []
        var lastStart: UInt64?
    }
    private let unknown = Mutex(UnknownReading())
    static let unknownGapNanoseconds: UInt64 = 1_000_000_000
    static let maxWaiting = 256

    /// Refreshes and waits (at start, before listening: a store token works from the first request).
    package func refreshAndWait() {
        ThreadWait<Void>.answer { done in refreshNow { done(()) } }
    }

    /// What one reading of the store came to.
    private enum Step: Sendable {
        case nothing
        case adopted(previous: APICredentials, adopted: APICredentials, origin: String, conflicts: [String])
        case refused(Refusal, found: Int64?, held: Held, firstTime: Bool)
    }

    private func consider(_ bytes: [UInt8]?, done: (@Sendable () -> Void)?) {
        // Judged and adopted under one lock: two refreshes (the timer's, a change's) never
        // adopt out of order.
        let step: Step = state.withLock { state in
            switch Self.judge(bytes, held: state.held, seal: seal) {
            case .unchanged:
                state.refused = nil
                return .nothing
            case let .adopt(credentials):
                let previous = state.held.credentials
                let conflicts = directory.adopt(credentials.tokens)
                directory.adoptedDocument.withLock { $0 = credentials }
                state.held = Held(bytes: bytes, credentials: credentials)
                state.refused = nil
                let origin = state.own.contains(credentials.serial) ? "this_node" : "store"
                state.own = state.own.filter { $0 > credentials.serial }
                return .adopted(previous: previous, adopted: credentials, origin: origin, conflicts: conflicts)
            case let .refuse(refusal, found):
                let marker = bytes ?? []
                let firstTime = state.refused != marker
                state.refused = marker
                return .refused(refusal, found: found, held: state.held, firstTime: firstTime)
            }
        }
        switch step {
        case .nothing:
            done?()
        case let .adopted(previous, adopted, origin, conflicts):
            logAdoption(previous: previous, adopted: adopted, origin: origin)
            for id in conflicts {
                logger.error(
                    "an API credential in the store has the id of a token in auth.tokens; the store's is refused",
                    metadata: ["token_id": .string(id)])
            }
            for id in directory.orphans {
                logger.warning(
                    "an API credential in the store is refused: the token that minted it no longer holds",
                    metadata: ["token_id": .string(id)])
            }
            done?()
        case let .refused(refusal, found, held, firstTime):
            if firstTime { logRefusal(refusal, found: found, held: held) }
            guard let good = held.bytes else {
                done?()
                return
            }
            putBack(good, replacing: bytes, serial: held.credentials.serial, done: done)
        }
    }

    /// Writes the held document back in place of `refused` (compare-and-set: a change made
    /// meanwhile is judged at the next refresh instead).
    private func putBack(_ good: [UInt8], replacing refused: [UInt8]?, serial: Int64, done: (@Sendable () -> Void)?) {
        vault.withStore(reads: false) { store in
            try store.replaceMetadata(APICredentials.storeName, expected: refused, with: good)
        } completion: { [self] result in
            switch result {
            case .success(true):
                logger.notice(
                    "put this node's API credentials document back in the store",
                    metadata: ["serial": .string(String(serial))])
            case .success(false):
                break  // changed meanwhile: the next refresh judges what is there now
            case let .failure(error):
                logger.warning(
                    "cannot put this node's API credentials document back in the store",
                    metadata: ["reason": .string("\(error)")])
            }
            done?()
        }
    }

    private func logAdoption(previous: APICredentials, adopted: APICredentials, origin: String) {
        let before = Dictionary(previous.tokens.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        let after = Set(adopted.tokens.map(\.id))
        let added = adopted.tokens.map(\.id).filter { before[$0] == nil }
        let removed = previous.tokens.map(\.id).filter { !after.contains($0) }
        let replaced = adopted.tokens.filter { token in
            before[token.id].map { APICredentials(tokens: [$0]) != APICredentials(tokens: [token]) } ?? false
        }.map(\.id)
        audit.record(
            AuditEvent.Draft(
                made: .tokensAdopt, tokenID: "-", client: "-", aliasReference: nil, result: .ok,
                facts: [
                    ("added", added.joined(separator: ",")), ("removed", removed.joined(separator: ",")),
                    ("replaced", replaced.joined(separator: ",")), ("serial", String(adopted.serial)),
                    ("previous_serial", String(previous.serial)), ("origin", origin),
                ]))
    }

    private func logRefusal(_ refusal: Refusal, found: Int64?, held: Held) {
        var facts: [(key: String, value: String)] = [
            ("reason", refusal.rawValue), ("held_serial", String(held.credentials.serial)),
        ]
        if let found { facts.append(("serial", String(found))) }
        var metadata: Logger.Metadata = [:]
        for (key, value) in facts { metadata[key] = .string(value) }
        logger.error("\(Self.explanation(refusal, holding: held))", metadata: metadata)
        audit.record(
            AuditEvent.Draft(
                made: .tokensAdopt, tokenID: "-", client: "-", aliasReference: nil, result: .refused,
                facts: facts),
            level: .error)
    }
}
