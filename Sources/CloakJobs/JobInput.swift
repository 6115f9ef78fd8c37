import CloakCore
import CloakCrypto
import CloakVault

/// A new import's input as it arrives (a file `cloak import` reads, a request's body): read as
/// a node will read it, so a file whose header cannot be imported, or whose CSV never closes a
/// quote, is refused as soon as that shows (``ImportReader/Fatal``), and sealed into chunks of
/// ``FileSeal/chunkSize`` bytes under the job's key, a chunk sealed once more bytes show it is
/// not the last. Holds one chunk of plaintext at most. Pure but for the sealing.
package struct JobInput {
    let id: JobID
    let seal: JobSeal
    private var reader: ImportReader
    private var pending: [UInt8] = []
    private var next = 0
    /// Rows read so far.
    package private(set) var rows: Int64 = 0
    /// Bytes given so far.
    private(set) var bytes = 0

    package init(id: JobID, seal: JobSeal, plan: ImportPlan) {
        self.id = id
        self.seal = seal
        reader = ImportReader(plan: plan)
        pending.reserveCapacity(FileSeal.chunkSize)
    }

    /// Takes the next bytes; the chunks they completed, sealed, with their places.
    package mutating func feed(_ piece: [UInt8]) throws -> [(index: Int, sealed: [UInt8])] {
        bytes += piece.count
        rows += Int64(try reader.feed(piece).count)
        var out: [(index: Int, sealed: [UInt8])] = []
        var rest = piece[...]
        while !rest.isEmpty {
            let take = min(FileSeal.chunkSize - pending.count, rest.count)
            pending.append(contentsOf: rest.prefix(take))
            rest = rest.dropFirst(take)
            if pending.count == FileSeal.chunkSize && !rest.isEmpty { out.append(try sealPending(isLast: false)) }
        }
        return out
    }

    /// The input ended: its last chunk (sealed as the last; empty for an input that ended on a
    /// chunk's edge).
    package mutating func finish() throws -> (index: Int, sealed: [UInt8]) {
        rows += Int64(try reader.finish().count)
        return try sealPending(isLast: true)
    }

    private mutating func sealPending(isLast: Bool) throws -> (index: Int, sealed: [UInt8]) {
        // A full chunk that more bytes follow is sealed then; one that ended the input, now.
        if !isLast && pending.count < FileSeal.chunkSize { preconditionFailure("a chunk sealed short") }
        let sealed = try seal.seal(pending, part: JobPart.input.rawValue, index: next, isLast: isLast)
        defer {
            next += 1
            pending.removeAll(keepingCapacity: true)
        }
        return (next, sealed)
    }
}
