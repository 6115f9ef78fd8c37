import CloakCore
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where an embedded store's (SQLite's) reads keep their audit events between the answer and
/// the store (issue 74): a file beside the database, `<database>-audit.<chain>`, that the vault thread
/// appends each batch's sealed blocks to and flushes (`fdatasync`) before any of the batch's
/// answers leaves. A reveal then costs an append and a share of one flush, where a transaction
/// of its own wrote and flushed the table's pages (half the CPU a batch, measured: 89 µs
/// against 181 µs a flush on this machine's ext4; and no write lock).
///
/// The blocks are the chain's own (``AuditChain``: sealed before they are written, never after
/// a restart); the vault thread copies them into `audit_blocks` between batches, within a
/// second, and then empties the file (``AuditTrail/drainIfDue(_:force:)``); a node that stops
/// removes it. At start a vault copies whatever a dead node left in any segment beside the
/// database before it serves (``recoverAbandoned(beside:into:log:)``).
///
/// A record is `length` (u32), CRC-32C of the payload (u32), then the payload: the chain's name,
/// the block's first place, body, previous MAC and MAC, each length-prefixed. A record cut short
/// by a crash is found by its length or checksum and cut at start (logged); a damaged record
/// with others after it is no crash: the file is kept aside whole (`….damaged-<time>`) and
/// `cloak audit verify` names the gap its events leave.
///
/// A failed write is undone (the file cut back to where it was) and fails the batch; a failed
/// flush fails the batch and every audited answer after it (``failed``) until the node restarts:
/// after `fdatasync` fails, what the kernel kept of the file is unknown, and a retry can report
/// success over lost data.
final class AuditSegment {
    /// The file's system calls: tests fail a write or a flush and record their order.
    struct FileCalls: @unchecked Sendable {
        var write: (Int32, UnsafeRawBufferPointer, Int) -> Int = { fd, bytes, offset in
            pwrite(fd, bytes.baseAddress, bytes.count, off_t(offset))
        }
        var flush: (Int32) -> Int32 = { fdatasync($0) }
        var truncate: (Int32, Int) -> Int32 = { ftruncate($0, off_t($1)) }
    }

    /// Why an append failed (the batch is answered 503).
    enum Failure: Error, CustomStringConvertible {
        case write(Int32), flush(Int32), failedBefore

        var description: String {
            switch self {
            case let .write(code): return "the audit segment could not be written (errno \(code))"
            case let .flush(code): return "the audit segment could not be flushed (errno \(code))"
            case .failedBefore: return "the audit segment failed to flush earlier: audited answers stop until a restart"
            }
        }
    }

    /// The segment of the vault thread writing `chain`, beside `databasePath`: one a node, since
    /// several processes may serve one SQLite file (each its own chains).
    static func path(beside databasePath: String, chain: String) -> String {
        let name = chain.unicodeScalars.map { scalar -> String in
            let c = Character(scalar)
            return c.isASCII && (c.isLetter || c.isNumber || c == "-") ? String(c) : "_"
        }.joined()
        return databasePath + "-audit." + name
    }

    /// Every segment beside `databasePath` (not those kept aside as damaged, nor one being made).
    static func paths(beside databasePath: String) -> [String] {
        let directory = (databasePath as NSString).deletingLastPathComponent
        let prefix = (databasePath as NSString).lastPathComponent + "-audit."
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.isEmpty ? "." : directory)) ?? []
        return names.filter { $0.hasPrefix(prefix) && !$0.contains(".damaged-") && !$0.hasSuffix(".new") }.sorted()
            .map { directory.isEmpty ? $0 : directory + "/" + $0 }
    }

    /// The largest record read back: a block holds at most 4,096 events.
    static let maxRecord = 64 << 20

    let path: String
    private let fd: Int32
    private let calls: FileCalls
    /// Where the next record goes: the end of what was written and flushed.
    private var end = 0
    /// The blocks in the file, not yet in the store, oldest first.
    private(set) var pending: [AuditBlock] = []
    /// When the oldest pending block was written (uptime nanoseconds).
    private(set) var pendingSince: UInt64 = 0
    /// A flush failed (or a failed write could not be undone): nothing more is appended.
    private(set) var failed = false
    private var released = false
    /// The records of the batch being appended (reused: see ``append(_:now:)``).
    private var scratch: [UInt8] = []

    /// Makes the segment at `path` for the one vault thread that appends to it, locked while
    /// it lives (``recoverAbandoned(beside:into:log:)`` leaves a locked segment alone). Made
    /// under another name and linked into place once locked, so no other process can take it
    /// for a dead node's; refused when it exists (a vault of the same chain serves).
    init(path: String, calls: FileCalls = FileCalls()) throws(StoreError) {
        self.path = path
        self.calls = calls
        let made = path + ".new"
        unlink(made)
        let fd = open(made, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .unavailable("cannot make the audit segment \(made) (errno \(errno))") }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            close(fd)
            unlink(made)
            throw .unavailable("cannot lock the audit segment \(made) (errno \(errno))")
        }
        defer { unlink(made) }
        guard link(made, path) == 0 else {
            let code = errno
            close(fd)
            throw .unavailable(
                code == EEXIST
                    ? "a vault of this node already serves this database (its audit segment \(path) exists)"
                    : "cannot place the audit segment \(path) (errno \(code))")
        }
        self.fd = fd
    }

    deinit { if !released { close(fd) } }

    /// At stop, after the last copy into the store: the file is removed when the store holds
    /// everything it did (else it stays, for the next start to copy), and its lock released.
    func release() {
        guard !released else { return }
        released = true
        if pending.isEmpty && !failed { unlink(path) }
        failed = true
        close(fd)
    }

    /// At start, before this node appends: copies what every segment beside `databasePath`
    /// that no live process holds (a node that stopped or crashed before its blocks were in the
    /// store) into `store`, then removes it (``recover(_:path:into:log:)``). A segment another
    /// process holds locked is its own, left alone.
    static func recoverAbandoned(beside databasePath: String, into store: any AliasStore, log: (String) -> Void)
        throws(StoreError)
    {
        for path in paths(beside: databasePath) {
            let fd = open(path, O_RDWR | O_CLOEXEC)
            guard fd >= 0 else { continue }
            defer { close(fd) }
            guard flock(fd, LOCK_EX | LOCK_NB) == 0 else { continue }
            if try !recover(fd, path: path, into: store, log: log) { unlink(path) }
        }
    }

    /// Appends `blocks` and flushes them: durable when this returns. `now`: uptime nanoseconds.
    func append(_ blocks: [AuditBlock], now: UInt64) throws(Failure) {
        guard !failed else { throw .failedBefore }
        guard !blocks.isEmpty else { return }
        // One buffer for every batch: its capacity stays, so an append allocates nothing.
        scratch.removeAll(keepingCapacity: true)
        for block in blocks { Self.encode(block, into: &scratch) }
        let bytes = scratch
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { all in
                calls.write(fd, UnsafeRawBufferPointer(rebasing: all[written...]), end + written)
            }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                let code = n < 0 ? errno : ENOSPC
                // Undone: the next append starts where this one did.
                if calls.truncate(fd, end) != 0 { failed = true }
                throw .write(code)
            }
            written += n
        }
        guard calls.flush(fd) == 0 else {
            failed = true
            throw .flush(errno)
        }
        end += bytes.count
        if pending.isEmpty { pendingSince = now }
        pending += blocks
    }

    /// After the pending blocks were committed to the store: the file starts over. Not flushed:
    /// a crash that loses the cut copies them again (the copy skips blocks already stored).
    func drained() {
        // A failed segment is not touched again (what a failed flush left in it is unknown; the
        // next start copies it): only its blocks, now stored, are no longer pending.
        guard !failed else { return pending.removeAll() }
        if calls.truncate(fd, 0) != 0 {
            // The next record would follow stale bytes; they are stored, so nothing is lost.
            failed = true
            return
        }
        end = 0
        pending.removeAll(keepingCapacity: true)
    }

    // MARK: - Records

    static func encode(_ block: AuditBlock, into out: inout [UInt8]) {
        // The header's place first; the payload written straight after it, then measured.
        let header = out.count
        out.append(contentsOf: repeatElement(0, count: 8))
        put(UInt32(block.chain.utf8.count), into: &out)
        out += block.chain.utf8
        put(UInt64(bitPattern: block.first), into: &out)
        put(UInt32(block.body.count), into: &out)
        out += block.body
        put(UInt32(block.previousMAC.count), into: &out)
        out += block.previousMAC
        put(UInt32(block.mac.count), into: &out)
        out += block.mac
        let length = UInt32(out.count - header - 8)
        let sum = CRC32C.checksum(out[(header + 8)...])
        for index in 0..<4 {
            out[header + index] = UInt8(length >> (24 - 8 * index) & 0xFF)
            out[header + 4 + index] = UInt8(sum >> (24 - 8 * index) & 0xFF)
        }
    }

    /// What a segment's bytes hold: the blocks of its whole records, and where they end.
    struct Contents: Equatable {
        var blocks: [AuditBlock]
        /// The length of the whole records; bytes after it are torn or damaged.
        var validLength: Int
        /// A record failed its checksum with whole records after it: not a torn tail.
        var damaged: Bool
    }

    static func decode(_ bytes: [UInt8]) -> Contents {
        var blocks: [AuditBlock] = []
        var offset = 0
        while bytes.count - offset >= 8 {
            let length = Int(u32(bytes, offset)), sum = u32(bytes, offset + 4)
            let start = offset + 8
            guard length <= maxRecord, length <= bytes.count - start else { break }
            let payload = bytes[start..<start + length]
            guard CRC32C.checksum(payload) == sum, let block = block(Array(payload)) else {
                // A checksum that fails with at least one whole record after it is damage.
                let next = start + length
                let followed = bytes.count - next >= 8 && Int(u32(bytes, next)) <= bytes.count - next - 8
                return Contents(blocks: blocks, validLength: offset, damaged: followed)
            }
            blocks.append(block)
            offset = start + length
        }
        return Contents(blocks: blocks, validLength: offset, damaged: false)
    }

    private static func block(_ payload: [UInt8]) -> AuditBlock? {
        var at = 0
        func field() -> [UInt8]? {
            guard payload.count - at >= 4 else { return nil }
            let length = Int(u32(payload, at))
            guard length <= payload.count - at - 4 else { return nil }
            defer { at += 4 + length }
            return Array(payload[at + 4..<at + 4 + length])
        }
        guard let chain = field(), let name = String(validating: chain, as: UTF8.self), payload.count - at >= 8
        else { return nil }
        let first = Int64(bitPattern: UInt64(u32(payload, at)) << 32 | UInt64(u32(payload, at + 4)))
        at += 8
        guard let body = field(), let previous = field(), let mac = field(), at == payload.count else { return nil }
        return AuditBlock(chain: name, first: first, body: body, previousMAC: previous, mac: mac)
    }

    /// The blocks in the segment at `path` (none when there is no file), read without changing it:
    /// what `cloak audit verify` adds to the store's blocks.
    static func read(path: String) throws(StoreError) -> Contents {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            if errno == ENOENT { return Contents(blocks: [], validLength: 0, damaged: false) }
            throw .unavailable("cannot read the audit segment \(path) (errno \(errno))")
        }
        defer { close(fd) }
        return decode(try contents(of: fd, path: path))
    }

    private static func contents(of fd: Int32, path: String) throws(StoreError) -> [UInt8] {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        var offset = 0
        while true {
            let n = chunk.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, off_t(offset)) }
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { throw .unavailable("cannot read the audit segment \(path) (errno \(errno))") }
            if n == 0 { return bytes }
            bytes += chunk[0..<n]
            offset += n
        }
    }

    /// Copies the blocks a stop left in the segment open at `fd` into `store` (those already
    /// there skipped), and tells `log` what was copied and cut. Answers whether the file was
    /// moved aside (damaged: its undamaged records copied first).
    private static func recover(_ fd: Int32, path: String, into store: any AliasStore, log: (String) -> Void)
        throws(StoreError) -> Bool
    {
        let bytes = try contents(of: fd, path: path)
        let found = decode(bytes)
        if !found.blocks.isEmpty {
            try store.transaction { () throws(StoreError) in try store.appendAuditBlocksNotStored(found.blocks) }
            log("audit segment: copied \(found.blocks.count) block(s) a stop left into the store")
        }
        let cut = bytes.count - found.validLength
        guard cut > 0 else { return false }
        if found.damaged {
            let aside = path + ".damaged-\(Int(time(nil)))"
            guard rename(path, aside) == 0 else {
                throw .unavailable("cannot move the damaged audit segment \(path) aside (errno \(errno))")
            }
            log(
                "audit segment: a damaged record at byte \(found.validLength) with records after it; "
                    + "the file is kept as \(aside) and `cloak audit verify` names the events missing")
            return true
        }
        log("audit segment: cut \(cut) byte(s) of a record torn by a crash at byte \(found.validLength)")
        return false
    }

    private static func put(_ value: UInt32, into out: inout [UInt8]) {
        out += [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }

    private static func put(_ value: UInt64, into out: inout [UInt8]) {
        put(UInt32(value >> 32), into: &out)
        put(UInt32(value & 0xFFFF_FFFF), into: &out)
    }

    private static func u32(_ bytes: [UInt8], _ at: Int) -> UInt32 {
        UInt32(bytes[at]) << 24 | UInt32(bytes[at + 1]) << 16 | UInt32(bytes[at + 2]) << 8 | UInt32(bytes[at + 3])
    }
}

extension AliasStore {
    /// Appends those of `blocks` the store does not hold yet (by chain and first place): what a
    /// segment's copy into the store does, twice without harm (a crash between the copy's commit
    /// and the file's cut). In the caller's transaction.
    func appendAuditBlocksNotStored(_ blocks: [AuditBlock]) throws(StoreError) {
        var missing: [AuditBlock] = []
        for block in blocks {
            let stored = try auditChain(block.chain, after: block.first - 1, limit: 1)
            if stored.first?.block.first != block.first { missing.append(block) }
        }
        if !missing.isEmpty { try appendAuditBlocks(missing) }
    }
}
