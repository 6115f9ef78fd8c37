import CloakCore
import CloakCrypto
import CloakVault
import Foundation

/// What `cloak keys` does, against the store the configuration names (any node, or an
/// operator's machine with the same configuration), while nodes serve. Each change is a
/// compare-and-set of the store's wrapped ring, so two operators cannot lose a version; each
/// prints an audit line and keeps it in the store (``AliasStore/appendKeyAudit(_:at:)``).
package struct KeyAdministration {
    package let settings: ServiceConfiguration.VaultSettings
    package let environment: [String: String]
    package let store: any AliasStore
    /// Who runs the command (the operating system's user), for the audit trail.
    package let user: String

    package init(
        settings: ServiceConfiguration.VaultSettings, environment: [String: String], store: any AliasStore,
        user: String = KeyAdministration.currentUser()
    ) {
        self.settings = settings
        self.environment = environment
        self.store = store
        self.user = user
    }

    package typealias Failure = KeyCustody.Error

    /// The name of the effective user, or its uid.
    package static func currentUser() -> String {
        if let entry = getpwuid(geteuid()), let name = entry.pointee.pw_name { return String(cString: name) }
        return "uid \(geteuid())"
    }

    func source() throws -> KeySource {
        do { return try KeySource.effective(settings.keys, environment: environment) } catch {
            throw Failure(error.description)
        }
    }

    func open() throws -> KeyCustody.Opened {
        try KeyCustody.open(try source(), environment: environment, store: store, firstRun: false, logger: nil)
    }

    // MARK: Status

    package struct Status: Sendable, Equatable {
        package var current: String
        /// `file`, `env` or `pkcs11`.
        package var wrapping: String
        /// Where: a path, a variable's name, a token's and an object's labels.
        package var location: String
        /// Every version of the ring, oldest first, with everything it seals (records' values,
        /// files' and jobs' keys).
        package var versions: [(id: String, records: Int)]
        /// What each version seals, by kind (``KeyUse``): `status` names jobs as jobs.
        package var uses: [String: [KeyUse: Int]] = [:]

        /// "3 records, 2 jobs" for `version` ("0 records" when it seals nothing).
        package func described(_ version: String) -> String {
            let counts = uses[version] ?? [:]
            let named = KeyUse.allCases.compactMap { use in counts[use].flatMap { $0 > 0 ? use.counted($0) : nil } }
            return named.isEmpty ? "0 records" : named.joined(separator: ", ")
        }
        /// Records sealed with versions the ring no longer holds (restored from an old backup).
        package var orphans: [(id: String, records: Int)]

        package static func == (a: Status, b: Status) -> Bool {
            a.current == b.current && a.wrapping == b.wrapping && a.versions.map(\.id) == b.versions.map(\.id)
                && a.versions.map(\.records) == b.versions.map(\.records)
        }

        /// `{"current": …, "wrapping": …, "versions": [{"id": …, "records": N}]}`, exactly; `records`
        /// counts everything the version seals, and a version that seals files' or jobs' keys,
        /// or groups, also says how many (`"files": N`, `"jobs": N`, `"groups": N`).
        package var json: String {
            let versions = JSONValue.array(
                versions.map { version in
                    var members: [(String, JSONValue)] = [
                        ("id", .string(version.id)), ("records", .number(String(version.records))),
                    ]
                    for use in [KeyUse.files, .jobs, .groups] {
                        if let n = uses[version.id]?[use], n > 0 { members.append((use.rawValue, .number(String(n)))) }
                    }
                    return .object(members)
                })
            return String(
                decoding: JSONWriter.encode(
                    .object([("current", .string(current)), ("wrapping", .string(wrapping)), ("versions", versions)])),
                as: UTF8.self)
        }
    }

    package func status() throws -> Status {
        let opened = try open()
        let uses = try store.keyUseCounts()
        let counts = uses.mapValues { $0.values.reduce(0, +) }
        let ids = Set(opened.ring.keys.map(\.id))
        return Status(
            current: opened.ring.currentID, wrapping: opened.wrapping.kind, location: opened.wrapping.location,
            versions: opened.ring.keys.map { ($0.id, counts[$0.id] ?? 0) }, uses: uses,
            orphans: counts.filter { !ids.contains($0.key) }.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
    }

    // MARK: Rotate, retire

    /// Adds a version and makes it current. Returns the old and the new current version.
    package func rotate() throws -> (from: String, to: String, audit: String) {
        let opened = try open()
        let next = opened.ring.rotated()
        guard try KeyCustody.store(next, wrappedBy: opened.wrapping, in: store, replacing: opened.stored) else {
            throw Failure("another process changed the key ring meanwhile; run the command again")
        }
        let audit = try record(
            .keysRotate, ring: opened.ring,
            [
                ("from", .string(opened.ring.currentID)), ("to", .string(next.currentID)),
                ("versions", .string(next.keys.map(\.id).joined(separator: ","))),
            ])
        return (opened.ring.currentID, next.currentID, audit)
    }

    /// Why a version cannot be retired.
    package enum RetireRefusal: Swift.Error, CustomStringConvertible {
        case current(String)
        case unknown(String)
        case inUse(String, records: Int)
        case recent(String, seconds: Int)

        package var description: String {
            switch self {
            case let .current(id): return "\(id) is the current key; rotate first"
            case let .unknown(id): return "the key ring has no key \(id)"
            case let .inUse(id, records):
                return
                    "\(records) records, files' keys or jobs' keys are still sealed with \(id): run `cloak keys rewrap` "
                    + "first (it re-seals all three)"
            case let .recent(id, seconds):
                return
                    "\(id) was current until \(seconds) s ago; nodes that have not picked up the rotation yet may "
                    + "still seal with it: run `cloak keys rewrap` and retire it after two vault.key_refresh_s"
            }
        }
    }

    /// Removes `version` from the ring when no record uses it, and it is not the current one.
    package func retire(_ version: String) throws -> String {
        let opened = try open()
        guard version != opened.ring.currentID else { throw RetireRefusal.current(version) }
        guard opened.ring.key(id: version) != nil else { throw RetireRefusal.unknown(version) }
        let records = try store.recordCounts()[version] ?? 0
        guard records == 0 else { throw RetireRefusal.inUse(version, records: records) }
        // A node reads the ring every key_refresh_s: until two intervals have passed since the
        // rotation, one may still seal new records with the version being retired.
        if let since = opened.ring.retiredFromCurrent(version) {
            let age = Int(Date().timeIntervalSince(since))
            if age < 2 * settings.keyRefreshSeconds { throw RetireRefusal.recent(version, seconds: max(0, age)) }
        }
        let next = try opened.ring.retiring(version)
        guard try KeyCustody.store(next, wrappedBy: opened.wrapping, in: store, replacing: opened.stored) else {
            throw Failure("another process changed the key ring meanwhile; run the command again")
        }
        return try record(
            .keysRetire, ring: opened.ring,
            [("version", .string(version)), ("versions", .string(next.keys.map(\.id).joined(separator: ",")))])
    }

    // MARK: Audit

    /// Prints nothing: returns the line and keeps it in the store: in the key audit trail, and as
    /// an audit event of this command's chain (``CommandAudit``; `client` is `cli`, the token the
    /// operator's user name).
    func record(_ action: AuditAction, ring: KeyRing, _ fields: [(String, JSONValue)]) throws -> String {
        let now = UTCTimestamp.now()
        var members: [(key: String, value: JSONValue)] = [
            ("ts", .string(UTCTimestamp.string(seconds: now.seconds, milliseconds: now.milliseconds))),
            ("level", .string("info")), ("msg", .string("audit")),
            ("action", .string(action.text)),
        ]
        for (key, value) in fields { members.append((key, value)) }
        members.append(("user", .string(user)))
        let line = String(decoding: JSONWriter.encode(.object(members)), as: UTF8.self)
        try store.appendKeyAudit(line, at: Int64(now.seconds))
        let facts = fields.compactMap { key, value in value.stringValue.map { AuditEvent.Fact.made(key, $0) } }
        let head = try CommandAudit.append(
            [
                AuditEvent.Draft(
                    at: Int64(now.seconds) * 1000 + Int64(now.milliseconds), action: action, tokenID: "cli:" + user,
                    client: "cli", result: .ok, facts: facts)
            ], keys: ring, to: store)
        guard let head else { return line }
        // The command's chain head, as a node logs its own: keep it for `cloak audit verify --heads`.
        let headLine: JSONValue = .object([
            ("ts", .string(UTCTimestamp.string(seconds: now.seconds, milliseconds: now.milliseconds))),
            ("level", .string("info")), ("msg", .string("audit head")), ("chain", .string(head.chain)),
            ("mac", .string(head.mac.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined())),
            ("seq", .string(String(head.seq))),
        ])
        return line + "\n" + JSONWriter.string(headLine)
    }
}
