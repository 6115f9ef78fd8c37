import CloakCore
import CloakHTTP
import CloakVault
import Foundation
import Logging
import Synchronization

/// Keeps this node's guess windows (``BucketGuessLimiter``) across restarts (review V, item 5:
/// after kill -9 or SIGTERM a bucket limited to 3 values an hour took 3 more each time). A
/// sealed snapshot (``Vault/sealNodeState(_:name:)``) is written into the store's `meta` as
/// `guess_windows.<node>` at most every 10 s while the windows change, and at stop; at start,
/// before the first request, the node replays it. A restart therefore loses at most the last
/// 10 s of counting (none at a clean stop).
///
/// On SQLite the node is the store's one writer: its name is `local`. On PostgreSQL each node
/// keeps its own row (`host:port`) and restores only that one: nodes share the store, not their
/// windows (a token spread over N nodes is still counted per node, docs/scaling.md).
package final class GuessWindowsKeeper: Sendable {
    package static let prefix = "guess_windows."
    static let interval = 10

    let vault: Vault
    let limiter: BucketGuessLimiter
    let node: String
    let logger: Logger
    private let timer = RepeatingTimer(label: "cloak.guess-windows", interval: GuessWindowsKeeper.interval)
    /// The limiter's ``BucketGuessLimiter/generation`` last written (-1: none yet).
    private let written = Atomic<Int>(-1)
    private let writing = Atomic<Bool>(false)

    init(vault: Vault, limiter: BucketGuessLimiter, node: String, logger: Logger) {
        self.vault = vault
        self.limiter = limiter
        self.node = node
        self.logger = logger
    }

    var name: String { Self.prefix + node }

    /// Replays the snapshot this node left, waiting for it (the node serves after).
    func restoreAndWait() {
        let name = self.name
        let read = ThreadWait<Result<[UInt8]?, any Error>>.answer { done in
            vault.withStore(reads: true, { store in try store.metadata(name) }, completion: done)
        }
        if case .failure = read {
            logger.error("guess windows: the store could not be read; counting starts afresh")
        }
        guard case let .success(sealed?) = read else { return }
        guard let plain = vault.openNodeState(sealed, name: name),
            let snapshot = GuessWindowsSnapshot.decode(plain, clock: .now())
        else {
            logger.warning("guess windows: the kept snapshot does not open (altered?); counting starts afresh")
            return
        }
        let taken = limiter.restore(snapshot.accounts, now: LoopClock.now())
        written.store(limiter.generation.load(ordering: .relaxed), ordering: .relaxed)
        logger.info(
            "guess windows restored",
            metadata: ["values": "\(taken)", "written_at": "\(snapshot.writtenAt)", "node": "\(node)"])
    }

    func start() {
        timer.start { [weak self] in self?.write(wait: false) }
    }

    /// Stops the timer and writes the windows as they are now (a clean stop loses nothing).
    func stop() {
        timer.stop()
        write(wait: true)
    }

    /// Writes a snapshot when the windows changed since the last one (one write at a time).
    func write(wait: Bool) {
        let generation = limiter.generation.load(ordering: .relaxed)
        guard generation != written.load(ordering: .relaxed),
            writing.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged
        else { return }
        let plain = GuessWindowsSnapshot.encode(limiter.kept(), clock: .now())
        let sealed: [UInt8]
        do { sealed = try vault.sealNodeState(plain, name: name) } catch {
            writing.store(false, ordering: .relaxed)
            return
        }
        let name = self.name
        let stored = ThreadWait<Void> { done in
            vault.withStore(reads: false) { store in
                try store.setMetadata(name, sealed)
            } completion: { [self] result in
                if case .success = result {
                    written.store(generation, ordering: .relaxed)
                } else {
                    logger.warning("guess windows: the snapshot could not be written; the next one tries again")
                }
                writing.store(false, ordering: .relaxed)
                done(())
            }
        }
        if wait { stored.wait() }
    }
}

/// A snapshot's bytes: the accounts' records with their seconds as Unix time (the limiter's
/// clock is the host's uptime, meaningless after a reboot or on another host).
enum GuessWindowsSnapshot {
    struct Clock {
        /// The limiter's seconds now (``BucketGuessLimiter/seconds(_:)``), and the Unix time.
        var uptime: UInt32
        var unix: Int64

        static func now() -> Clock {
            Clock(
                uptime: BucketGuessLimiter.seconds(LoopClock.now()).elapsed, unix: Int64(Date().timeIntervalSince1970))
        }
    }

    struct Decoded {
        var writtenAt: Int64
        var accounts: [(account: String, records: [GuessWindows.Kept])]
    }

    static let magic: [UInt8] = Array("CGW1".utf8)

    static func encode(_ accounts: [(account: String, records: [GuessWindows.Kept])], clock: Clock) -> [UInt8] {
        var out = magic
        append(UInt64(bitPattern: clock.unix), to: &out)
        append(UInt32(accounts.count), to: &out)
        for (account, records) in accounts {
            text(account, to: &out)
            var presenters: [String: UInt32] = [:]
            var names: [String] = []
            for record in records where presenters[record.presenter] == nil {
                presenters[record.presenter] = UInt32(names.count)
                names.append(record.presenter)
            }
            append(UInt32(names.count), to: &out)
            for name in names { text(name, to: &out) }
            append(UInt32(records.count), to: &out)
            for record in records {
                append(record.bucket, to: &out)
                append(record.value, to: &out)
                // Unix seconds: the record's uptime second moved by the clocks' difference now.
                append(UInt64(bitPattern: clock.unix - Int64(clock.uptime) + Int64(record.second)), to: &out)
                append(presenters[record.presenter]!, to: &out)
                out.append(record.held ? 1 : 0)
            }
        }
        return out
    }

    /// The snapshot's records at this host's uptime seconds (a record from before this boot is
    /// put at its first second: it is counted longer, never shorter); nil when it does not read.
    static func decode(_ bytes: [UInt8], clock: Clock) -> Decoded? {
        var reader = Reader(bytes: bytes)
        guard reader.take(4).map(Array.init) == magic, let writtenAt = reader.u64().map({ Int64(bitPattern: $0) }),
            let count = reader.u32()
        else { return nil }
        var accounts: [(account: String, records: [GuessWindows.Kept])] = []
        for _ in 0..<count {
            guard let account = reader.text(), let presenterCount = reader.u32() else { return nil }
            var names: [String] = []
            for _ in 0..<presenterCount {
                guard let name = reader.text() else { return nil }
                names.append(name)
            }
            guard let recordCount = reader.u32() else { return nil }
            var records: [GuessWindows.Kept] = []
            records.reserveCapacity(Int(min(recordCount, 1 << 20)))
            for _ in 0..<recordCount {
                guard let bucket = reader.u64(), let value = reader.u64(), let unix = reader.u64(),
                    let presenter = reader.u32(), Int(presenter) < names.count, let held = reader.take(1)?.first
                else { return nil }
                // Never later than now: a wall clock stepped back since the write must not put
                // values in the future (held longer, and past the limiter's headroom).
                let uptime = Int64(bitPattern: unix) &- clock.unix &+ Int64(clock.uptime)
                records.append(
                    GuessWindows.Kept(
                        bucket: bucket, value: value,
                        second: UInt32(clamping: min(max(0, uptime), Int64(clock.uptime))),
                        presenter: names[Int(presenter)], held: held == 1))
            }
            accounts.append((account, records))
        }
        guard reader.isAtEnd else { return nil }
        return Decoded(writtenAt: writtenAt, accounts: accounts)
    }

    private static func append(_ value: UInt64, to out: inout [UInt8]) {
        for shift in stride(from: 56, through: 0, by: -8) {
            out.append(UInt8(truncatingIfNeeded: value >> UInt64(shift)))
        }
    }

    private static func append(_ value: UInt32, to out: inout [UInt8]) {
        for shift in stride(from: 24, through: 0, by: -8) {
            out.append(UInt8(truncatingIfNeeded: value >> UInt32(shift)))
        }
    }

    private static func text(_ text: String, to out: inout [UInt8]) {
        let bytes = Array(text.utf8.prefix(65_535))
        out.append(UInt8(bytes.count >> 8))
        out.append(UInt8(bytes.count & 0xFF))
        out += bytes
    }

    private struct Reader {
        let bytes: [UInt8]
        var at = 0

        var isAtEnd: Bool { at == bytes.count }

        mutating func take(_ n: Int) -> ArraySlice<UInt8>? {
            guard n >= 0, bytes.count - at >= n else { return nil }
            defer { at += n }
            return bytes[at..<at + n]
        }

        mutating func u64() -> UInt64? { take(8).map { $0.reduce(0) { $0 << 8 | UInt64($1) } } }
        mutating func u32() -> UInt32? { take(4).map { $0.reduce(0) { $0 << 8 | UInt32($1) } } }

        mutating func text() -> String? {
            guard let length = take(2).map({ Int($0.first!) << 8 | Int($0.last!) }), let body = take(length) else {
                return nil
            }
            return String(decoding: body, as: UTF8.self)
        }
    }
}
