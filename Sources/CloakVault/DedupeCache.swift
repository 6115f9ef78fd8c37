import CloakCore
import Synchronization

/// What the vault remembers of PERSISTENT records it has read or written, by value fingerprint,
/// so asking again for a stored value's alias is answered on the request's loop without the
/// vault thread or a transaction. It holds no value and no key: a fingerprint (an HMAC of the
/// value, as the store keeps it), the record's creation time, classifiers and authentic aliases.
///
/// Only a vault that is the store's one writer may keep one (the embedded SQLite store):
/// another node sharing a PostgreSQL store could delete an alias this one still remembers. The
/// vault thread updates it after each commit, and drops a record before deleting it or changing
/// its classifiers, keeping it out until that change has its outcome; loop threads only read.
/// Bounded by two generations of `capacity / 2` entries: when the newer fills up it becomes the
/// older and the older is dropped, so records asked for again stay and the rest age out (a miss
/// only costs a trip to the store).
final class DedupeCache: Sendable {
    struct Entry: Sendable {
        let createdAt: Int64
        let classifiers: [String]
        /// The record's authentic aliases, without their signatures (only the store checks those).
        let aliases: [IssuedAlias]

        init(_ record: StoredRecord) {
            createdAt = record.createdAt
            classifiers = record.classifiers
            aliases = record.aliases.map { IssuedAlias(alias: $0.alias, format: $0.format, luhnValid: $0.luhnValid) }
        }

        /// The alias answering a request for `format` with that Luhn setting.
        func alias(_ format: AliasFormatName, luhnValid: Bool) -> IssuedAlias? {
            aliases.first { $0.matches(format, luhnValid: luhnValid) }
        }
    }

    /// A 32-byte fingerprint as four words: hashes and compares without an array.
    struct Key: Hashable, Sendable {
        let words: (UInt64, UInt64, UInt64, UInt64)

        init?(_ fingerprint: [UInt8]) {
            guard fingerprint.count == 32 else { return nil }
            words = fingerprint.withUnsafeBytes { raw in
                (
                    raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self),
                    raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self),
                    raw.loadUnaligned(fromByteOffset: 16, as: UInt64.self),
                    raw.loadUnaligned(fromByteOffset: 24, as: UInt64.self)
                )
            }
        }

        static func == (a: Key, b: Key) -> Bool { a.words == b.words }

        func hash(into hasher: inout Hasher) {
            // The fingerprint is already a keyed hash: one word spreads entries evenly.
            hasher.combine(words.0)
        }
    }

    private struct Generations {
        var newer: [Key: Entry] = [:]
        var older: [Key: Entry] = [:]
        /// Records being deleted or changed, with how many such jobs are under way: never
        /// remembered (nor answered) until the last of them has its outcome.
        var changing: [Key: Int] = [:]
    }

    let capacity: Int
    private let generations: Mutex<Generations>

    init(capacity: Int) {
        self.capacity = max(2, capacity)
        generations = Mutex(Generations())
    }

    func entry(_ fingerprint: [UInt8]) -> Entry? {
        guard let key = Key(fingerprint) else { return nil }
        return generations.withLock { $0.newer[key] ?? $0.older[key] }
    }

    /// On the vault thread, after the commit that wrote or read `record`.
    func remember(_ record: StoredRecord) {
        // A record that expires (a token holder's ttl_s) is not remembered: the cache would go on
        // answering it past its expiry.
        guard record.storage == .persistent, record.expiresAt == nil, let fingerprint = record.fingerprint,
            let key = Key(fingerprint)
        else { return }
        let entry = Entry(record)
        let half = capacity / 2
        let dropped = generations.withLock { g -> [Key: Entry] in
            guard g.changing[key] == nil else { return [:] }
            g.newer[key] = entry
            guard g.newer.count >= half else { return [:] }
            defer {
                g.older = g.newer
                g.newer = Dictionary(minimumCapacity: half)
            }
            return g.older
        }
        _ = dropped  // the old generation is freed here, outside the lock loops read through
    }

    /// On the vault thread, before a change to the record is written: the record is dropped and
    /// not remembered again (an earlier job of the same batch that read it remembers it after the
    /// commit) until ``changed(_:)``, called with the job's outcome. Between the commit and that
    /// outcome, a loop must not answer from what the change removed.
    func changing(_ fingerprint: [UInt8]?) {
        guard let fingerprint, let key = Key(fingerprint) else { return }
        generations.withLock { g in
            g.changing[key, default: 0] += 1
            g.newer.removeValue(forKey: key)
            g.older.removeValue(forKey: key)
        }
    }

    /// The change announced by ``changing(_:)`` committed or failed: the record may be
    /// remembered again (by the next job that reads it).
    func changed(_ fingerprint: [UInt8]?) {
        guard let fingerprint, let key = Key(fingerprint) else { return }
        generations.withLock { g in
            if let n = g.changing[key], n > 1 { g.changing[key] = n - 1 } else { g.changing[key] = nil }
            g.newer.removeValue(forKey: key)
            g.older.removeValue(forKey: key)
        }
    }

    var count: Int { generations.withLock { $0.newer.count + $0.older.count } }
}
