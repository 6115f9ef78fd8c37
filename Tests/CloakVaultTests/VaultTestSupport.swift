import CSQLite
import CloakCore
import CloakCrypto
import CloakTesting
import Foundation
import Synchronization
import Testing

@testable import CloakVault

// MARK: Documents

extension RevealedRecord {
    /// The record's document as a value, read back from what ``write(into:)`` writes.
    var json: JSONValue {
        var writer = JSONWriter()
        write(into: &writer)
        return try! JSONParser().parse(writer.bytes)  // the writer's own output always parses
    }
}

// MARK: Synchronous wrappers of the callback API

/// A completion never came within the time limit.
struct VaultTimedOut: Error, CustomStringConvertible {
    let operation: String
    var description: String { "\(operation): no completion within the time limit" }
}

/// Holds the one value a completion delivers. `@unchecked Sendable`: written once, on the
/// executor thread, before `done` is signalled; read only after `done` was waited for.
private final class Delivery<T>: @unchecked Sendable {
    var value: T?
    let done = DispatchSemaphore(value: 0)
}

/// Starts an asynchronous operation and blocks until its completion runs (or `timeout` passes).
func waitForCompletion<T>(
    _ operation: String, timeout: Double = 15,
    _ start: (@escaping @Sendable (T) -> Void) -> Void
) throws -> T {
    let delivery = Delivery<T>()
    start { value in
        delivery.value = value
        delivery.done.signal()
    }
    guard delivery.done.wait(timeout: .now() + timeout) == .success, let value = delivery.value else {
        throw VaultTimedOut(operation: operation)
    }
    return value
}

extension Vault {
    func createSync(_ requests: [AliasRequest], caller: AliasCaller = .trusted) throws -> Result<
        [RevealedRecord], VaultError
    > {
        try waitForCompletion("createAliases") { done in createAliases(requests, caller: caller, completion: done) }
    }

    /// Aliases one value and returns the alias issued in `format`.
    func alias(
        _ value: String, _ format: AliasFormatName, _ storage: StorageKind = .persistent,
        classifiers: [String] = [], luhnValid: Bool = true
    ) throws -> String {
        let records = try createSync([
            AliasRequest(
                value: value, format: format, storage: storage,
                classifiers: classifiers, luhnValid: luhnValid)
        ]).get()
        let alias = try #require(records.first?.aliases.first { $0.matches(format, luhnValid: luhnValid) }?.alias)
        return alias
    }

    func revealSync(_ aliases: [String]) throws -> Result<[String: RevealedRecord], VaultError> {
        try waitForCompletion("reveal") { done in reveal(aliases, completion: done) }
    }

    /// The record behind one alias, or nil when it is not found (deleted, expired, never issued).
    func revealOne(_ alias: String) throws -> RevealedRecord? {
        try revealSync([alias]).get()[alias]
    }

    func deleteSync(_ alias: String) throws -> Result<Void, VaultError> {
        try waitForCompletion("delete") { done in delete(alias, completion: done) }
    }

    func setClassifiersSync(_ classifiers: [String], alias: String) throws -> Result<Void, VaultError> {
        try waitForCompletion("setClassifiers") { done in setClassifiers(classifiers, alias: alias, completion: done) }
    }

    func pingSync() throws -> Result<Void, VaultError> {
        try waitForCompletion("ping") { done in ping(completion: done) }
    }
}

extension Result {
    /// The error of a failure, nil on success.
    var failure: Failure? {
        if case let .failure(error) = self { return error }
        return nil
    }
}

extension VaultError {
    var isUnavailable: Bool {
        if case .unavailable = self { return true }
        return false
    }
}

// MARK: Clock and harness

/// A clock the test moves by hand, in seconds since 1970.
final class TestClock: Sendable {
    private let seconds: Mutex<Int64>

    init(_ start: Int64 = 1_700_000_000) { seconds = Mutex(start) }

    var now: Int64 { seconds.withLock { $0 } }
    func advance(by delta: Int64) { seconds.withLock { $0 += delta } }
    var function: @Sendable () -> Int64 { { [self] in now } }
}

/// A temporary folder with one SQLite vault file, the vaults opened over it and a clock.
/// ``tearDown()`` closes every vault and removes the folder.
final class VaultHarness {
    let directory = TemporaryDirectory()
    let clock = TestClock()
    let keys = KeyRing.generate()
    private var opened: [Vault] = []

    var storePath: String { directory.path + "/vault.db" }

    /// A vault over a new connection to this harness's database file.
    func openVault(keys: KeyRing? = nil, settings: Vault.Settings = Vault.Settings(volatileTTLSeconds: 60)) throws
        -> Vault
    {
        let store = try SQLiteAliasStore(path: storePath)
        let vault = try Vault(store: store, keys: keys ?? self.keys, settings: settings, clock: clock.function)
        opened.append(vault)
        return vault
    }

    /// Runs SQL on the database file from outside the vault (a database writer's tampering).
    func execute(_ sql: String) throws {
        var db: OpaquePointer?
        guard sqlite3_open_v2(storePath, &db, SQLITE_OPEN_READWRITE, nil) == SQLITE_OK, let db else {
            throw VaultTimedOut(operation: "open \(storePath)")
        }
        defer { sqlite3_close(db) }
        // The vault's executor may be in its idle sweep: wait for its lock, as a writer would.
        sqlite3_busy_timeout(db, 10_000)
        guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else {
            throw VaultTimedOut(operation: "exec: " + String(cString: sqlite3_errmsg(db)))
        }
    }

    /// A second connection to the database, to look at what was committed.
    func inspector() throws -> SQLiteAliasStore { try SQLiteAliasStore(path: storePath) }

    /// Rows in a table of the database file (a check from outside the store's API).
    func rowCount(_ table: String) throws -> Int {
        var db: OpaquePointer?
        guard sqlite3_open_v2(storePath, &db, SQLITE_OPEN_READONLY, nil) == SQLITE_OK, let db else {
            throw StoreError.unavailable("cannot open \(storePath)")
        }
        defer { sqlite3_close(db) }
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(db, "SELECT count(*) FROM \(table)", -1, &statement, nil) == SQLITE_OK, let statement
        else {
            throw StoreError.unavailable("cannot count \(table)")
        }
        defer { sqlite3_finalize(statement) }
        guard sqlite3_step(statement) == SQLITE_ROW else { throw StoreError.unavailable("cannot count \(table)") }
        return Int(sqlite3_column_int64(statement, 0))
    }

    func tearDown() {
        for vault in opened { vault.close() }
        opened.removeAll()
        directory.remove()
    }
}

/// Runs `body` with a fresh harness and always tears it down.
func withVaultHarness<R>(_ body: (VaultHarness) throws -> R) throws -> R {
    let harness = VaultHarness()
    defer { harness.tearDown() }
    return try body(harness)
}

// MARK: Oracles independent of the code under test

/// The mod-10 check, written again here so the tests do not trust `CloakCore.Luhn`.
func passesLuhn(_ digits: String) -> Bool {
    let values = digits.compactMap(\.wholeNumberValue)
    guard values.count == digits.count, !values.isEmpty else { return false }
    var sum = 0
    for (offset, digit) in values.reversed().enumerated() {
        if offset % 2 == 1 {
            let doubled = digit * 2
            sum += doubled > 9 ? doubled - 9 : doubled
        } else {
            sum += digit
        }
    }
    return sum % 10 == 0
}

let base58Characters = Set("123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz")
let digitCharacters = Set("0123456789")
let alphanumeric62Characters = Set("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
let upperAlphanumeric36Characters = Set("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ")

/// Matches a whole string against a regular expression.
func matches(_ text: String, _ pattern: String) -> Bool {
    guard let regex = try? Regex(pattern) else { return false }
    return (try? regex.wholeMatch(in: text)) != nil
}

/// A version 4 UUID in lower case.
let rawUUIDPattern = "[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"
