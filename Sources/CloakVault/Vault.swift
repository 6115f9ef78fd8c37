import CloakCore
import CloakCrypto
import Foundation

/// One value to alias, as the Vault API and form tokenization ask for it.
public struct AliasRequest: Sendable {
    public var value: String
    public var format: AliasFormatName
    public var storage: StorageKind
    public var classifiers: [String]
    /// For card formats: whether the alias passes Luhn.
    public var luhnValid: Bool

    public init(value: String, format: AliasFormatName, storage: StorageKind, classifiers: [String] = [], luhnValid: Bool = true) {
        self.value = value
        self.format = format
        self.storage = storage
        self.classifiers = classifiers
        self.luhnValid = luhnValid
    }
}

/// A vault failure, mapped by the service to its VGSError code.
public enum VaultError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A value cannot take its format (1002); `index` is its position in the request.
    case invalidInput(index: Int, reason: String)
    /// No such alias, or it expired (1404).
    case notFound
    /// The store failed or is full; nothing was written (1500).
    case unavailable(String)

    public var description: String {
        switch self {
        case let .invalidInput(index, reason): return "item \(index): \(reason)"
        case .notFound: return "no such alias"
        case let .unavailable(reason): return reason
        }
    }
}

/// The vault: issues aliases, keeps values encrypted, reveals and deletes them.
///
/// Every operation runs on the vault's executor thread (never a loop thread) and calls its
/// completion there once its writes are committed.
public final class Vault: Sendable {
    public struct Settings: Sendable {
        public var environment: String
        public var volatileTTLSeconds: Int
        public var maxBatch: Int
        public init(environment: String = "sandbox", volatileTTLSeconds: Int = 3600, maxBatch: Int = 100) {
            self.environment = environment
            self.volatileTTLSeconds = volatileTTLSeconds
            self.maxBatch = maxBatch
        }
    }

    public let settings: Settings
    private let keys: KeyRing
    private let generator: AliasGenerator
    private let executor: VaultExecutor
    private let clock: @Sendable () -> Int64

    /// Alias candidates tried before giving up on a format whose space is nearly full.
    static let maxAttempts = 32
    /// Spaces up to this size are scanned candidate by candidate once random draws fail (a
    /// 4-digit CVC); larger ones would stall the vault thread, and 32 random draws suffice.
    static let scanLimit = 10_000

    public init(store: any AliasStore, keys: KeyRing, settings: Settings,
                clock: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }) throws(CryptoError) {
        self.settings = settings
        self.keys = keys
        self.clock = clock
        self.generator = try AliasGenerator(environment: settings.environment, ff1Key: keys.current.ff1Key)
        self.executor = VaultExecutor(store: store) { store in
            // Sweep expired VOLATILE records, 1,000 per transaction, until none is left (at most
            // 50,000 per run, so a large backlog cannot hold up requests for long).
            let now = clock()
            for _ in 0..<50 {
                do {
                    try store.begin()
                    let removed = try store.deleteExpired(now: now, limit: 1000)
                    try store.commit()
                    if removed < 1000 { return }
                } catch {
                    store.rollback()
                    return
                }
            }
        }
    }

    /// Finishes queued work and stops the executor.
    public func close() { executor.close() }

    /// Checks every request can be represented, before anything is queued.
    public static func check(_ requests: [AliasRequest]) throws(VaultError) {
        for (i, r) in requests.enumerated() {
            do { try AliasGenerator.validate(r.value, format: r.format) } catch {
                throw .invalidInput(index: i, reason: error.description)
            }
        }
    }

    /// Aliases every value (all or none), deduplicating PERSISTENT ones.
    public func createAliases(_ requests: [AliasRequest],
                              completion: @escaping @Sendable (Result<[RevealedRecord], VaultError>) -> Void) {
        do { try Self.check(requests) } catch { return completion(.failure(error)) }
        executor.submit({ [self] store in try create(requests, in: store) }, completion: { completion(Self.map($0)) })
    }

    /// Reveals each alias found (expired ones are not found).
    public func reveal(_ aliases: [String], completion: @escaping @Sendable (Result<[String: RevealedRecord], VaultError>) -> Void) {
        executor.submit({ [self] store in
            var out: [String: RevealedRecord] = [:]
            for alias in aliases {
                if let record = try liveRecord(alias, in: store) { out[alias] = try open(record) }
            }
            return out
        }, completion: { completion(Self.map($0)) })
    }

    /// Deletes an alias (and its value once no alias is left).
    public func delete(_ alias: String, completion: @escaping @Sendable (Result<Void, VaultError>) -> Void) {
        executor.submit({ [self] store in
            guard try liveRecord(alias, in: store) != nil, try store.deleteAlias(alias) else { throw VaultError.notFound }
        }, completion: { completion(Self.map($0)) })
    }

    /// Replaces the classifiers of the record an alias belongs to.
    public func setClassifiers(_ classifiers: [String], alias: String, completion: @escaping @Sendable (Result<Void, VaultError>) -> Void) {
        executor.submit({ [self] store in
            guard let record = try liveRecord(alias, in: store) else { throw VaultError.notFound }
            try store.setClassifiers(classifiers, recordID: record.id)
        }, completion: { completion(Self.map($0)) })
    }

    /// Answers when the store does.
    public func ping(completion: @escaping @Sendable (Result<Void, VaultError>) -> Void) {
        executor.submit({ store in try store.ping() }, completion: { completion(Self.map($0)) })
    }

    // MARK: On the executor thread

    private func liveRecord(_ alias: String, in store: any AliasStore) throws -> StoredRecord? {
        guard let record = try store.record(alias: alias) else { return nil }
        if let expires = record.expiresAt, expires <= clock() { return nil }
        return record
    }

    private func open(_ record: StoredRecord) throws -> RevealedRecord {
        guard let key = keys.key(id: record.keyID) else {
            throw VaultError.unavailable("the key \(record.keyID) that sealed a record is not in the key ring")
        }
        let plain: [UInt8]
        do {
            plain = try AESGCM.open(record.sealed, key: key.encryptionKey, associatedData: Self.associatedData(record.id, record.keyID))
        } catch {
            throw VaultError.unavailable("a record failed authentication")
        }
        return RevealedRecord(value: String(decoding: plain, as: UTF8.self), aliases: record.aliases, storage: record.storage,
                              classifiers: record.classifiers, createdAt: record.createdAt)
    }

    static func associatedData(_ recordID: String, _ keyID: String) -> [UInt8] { Array("\(recordID)|\(keyID)".utf8) }

    private func create(_ requests: [AliasRequest], in store: any AliasStore) throws -> [RevealedRecord] {
        var out: [RevealedRecord] = []
        for (index, request) in requests.enumerated() {
            // PERSISTENT values are deduplicated by a keyed fingerprint. VOLATILE ones never are:
            // with a 1,000-value CVC space, anyone allowed to alias could otherwise build a table
            // from alias to CVC, and aliasing again would keep a CVC alive past its TTL.
            let fingerprint = request.storage == .persistent
                ? Digest.hmacSHA256(key: keys.fingerprintKey.rawBytes, Array("cloak/v1/value\0".utf8) + Array(request.value.utf8))
                : nil
            var record: StoredRecord
            let now = clock()
            if let fingerprint, let existing = try store.record(fingerprint: fingerprint) {
                record = existing
            } else {
                let key = keys.current
                let id = "rec_" + Base58.encode(SecureRandom.bytes(16), width: 22)
                let sealed = try AESGCM.seal(Array(request.value.utf8), key: key.encryptionKey,
                                             associatedData: Self.associatedData(id, key.id))
                record = StoredRecord(
                    id: id, fingerprint: fingerprint, keyID: key.id, sealed: sealed, storage: request.storage,
                    classifiers: request.classifiers, createdAt: now,
                    expiresAt: request.storage == .volatile ? now + Int64(settings.volatileTTLSeconds) : nil, aliases: [])
                try store.insert(record)
            }
            if !record.aliases.contains(where: { $0.format == request.format }) {
                let issued = try issue(request, index: index, recordID: record.id, in: store)
                record.aliases.append(issued)
            }
            out.append(RevealedRecord(value: request.value, aliases: record.aliases, storage: record.storage,
                                      classifiers: record.classifiers, createdAt: record.createdAt))
        }
        return out
    }

    private func issue(_ request: AliasRequest, index: Int, recordID: String, in store: any AliasStore) throws -> IssuedAlias {
        // Random candidates first; in a small space (random-drawn aliases, at most 100,000 of
        // them) every candidate is then tried in turn, so a free alias is always found.
        let scan = AliasGenerator.randomSpace(request.value, request.format).map { $0 <= Self.scanLimit ? $0 : 0 } ?? 0
        for attempt in 0..<(Self.maxAttempts + scan) {
            let candidate: String
            do {
                candidate = try generator.alias(for: request.value, format: request.format, luhnValid: request.luhnValid,
                                                attempt: attempt)
            } catch {
                if error.isSpaceExhausted { break }
                throw VaultError.invalidInput(index: index, reason: error.description)
            }
            let issued = IssuedAlias(alias: candidate, format: request.format)
            let taken: Bool
            do {
                try store.addAlias(issued, toRecord: recordID)
                taken = false
            } catch {
                guard error == .aliasTaken else { throw error }
                taken = true  // another value holds this candidate: try the next one
            }
            if !taken { return issued }
        }
        throw VaultError.unavailable("no free \(request.format.rawValue) alias for a value of this shape")
    }

    private static func map<T>(_ result: Result<T, any Error>) -> Result<T, VaultError> {
        switch result {
        case let .success(value): return .success(value)
        case let .failure(error as VaultError): return .failure(error)
        case let .failure(error as StoreError): return .failure(.unavailable(error.description))
        case let .failure(error): return .failure(.unavailable("\(error)"))
        }
    }
}
