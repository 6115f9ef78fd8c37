import CloakCrypto

/// One writer's chain of audit events, sealed a block at a time (``AuditBlock``: the events one
/// commit appends): each block's MAC covers the one before, under a key
/// derived from the key ring (``keyPurpose``), so that someone who can write the database but has
/// no key can delete, alter, reorder or forge no event (nor block) without `cloak audit verify` naming it.
/// A cut-off tail is seen against the head each writer logs (each second it moved and at stop:
/// `audit head`), which verify takes as `--heads`.
///
/// A chain is one vault thread of one process (its ``Identity``): only that thread appends to
/// it, one batch at a time, so the chain needs no lock and never forks. A batch that does not
/// commit gives its links back (``restore(_:)``).
package struct AuditChain: Sendable {
    /// The derived key's purpose (``CloakCrypto/KeyRing/derivedMAC(purpose:)``).
    package static let keyPurpose = "audit-chain"
    /// The MAC before a chain's first block.
    package static let origin = [UInt8](repeating: 0, count: 32)

    /// The chain's name: the node, this process's start, the writer (`host:port/boot/n`).
    package let id: String
    /// The last event's place (0: none yet) and the last block's MAC.
    package private(set) var seq: Int64 = 0
    package private(set) var head: [UInt8] = AuditChain.origin
    private let key: HMACKey

    package init(id: String, key: HMACKey) {
        self.id = id
        self.key = key
    }

    /// Where the chain stands: handed back to ``restore(_:)`` when a batch does not commit.
    package struct Mark: Sendable, Equatable {
        package var seq: Int64
        package var head: [UInt8]
    }

    package var mark: Mark { Mark(seq: seq, head: head) }

    package mutating func restore(_ mark: Mark) {
        seq = mark.seq
        head = mark.head
    }

    /// Goes on after `block`, the chain's last in the store (read back after a commit whose
    /// outcome was not known).
    package mutating func resume(after block: AuditBlock, last: Int64) {
        seq = last
        head = block.mac
    }

    /// The next links of the chain: the drafts, in order, in as few blocks as the limits allow
    /// (``AuditBlockBody/maxEvents`` events, ``AuditBlock/maxSpanMilliseconds`` between the
    /// earliest and the latest event of a block); usually one.
    package mutating func seal(_ drafts: [AuditEvent.Draft]) -> [AuditBlock] {
        var blocks: [AuditBlock] = []
        var start = drafts.startIndex
        while start < drafts.endIndex {
            var end = start + 1
            var low = drafts[start].at, high = drafts[start].at
            while end < drafts.endIndex, end - start < AuditBlockBody.maxEvents {
                let at = drafts[end].at
                guard max(high, at) - min(low, at) <= AuditBlock.maxSpanMilliseconds else { break }
                low = min(low, at)
                high = max(high, at)
                end += 1
            }
            let body = AuditBlockBody.encode(drafts[start..<end])
            let first = seq + 1
            let mac = Self.mac(key: key, chain: id, first: first, body: body, previous: head)
            blocks.append(
                AuditBlock(
                    chain: id, first: first, drafts: drafts[start..<end], previousMAC: head, mac: mac, body: body))
            seq += Int64(end - start)
            head = mac
            start = end
        }
        return blocks
    }

    /// The MAC of a block: its chain (length-prefixed), its first place, its body (which is
    /// length-prefixed throughout, ``AuditBlockBody``) and the MAC before it.
    package static func mac(key: HMACKey, chain: String, first: Int64, body: [UInt8], previous: [UInt8]) -> [UInt8] {
        var message: [UInt8] = []
        message.reserveCapacity(domain.count + 12 + chain.utf8.count + body.count + previous.count)
        message.append(contentsOf: domain)
        var chain = chain
        let length = UInt32(chain.utf8.count).bigEndian
        withUnsafeBytes(of: length) { message.append(contentsOf: $0) }
        chain.withUTF8 { message.append(contentsOf: $0) }
        withUnsafeBytes(of: first.bigEndian) { message.append(contentsOf: $0) }
        message.append(contentsOf: body)
        message.append(contentsOf: previous)
        return key.authenticate(message)
    }

    private static let domain = Array("cloak/v2/audit-block\0".utf8)

    /// Whether `block` is authentic under this chain's key.
    package func isAuthentic(_ block: AuditBlock) -> Bool { Self.isAuthentic(block, key: key) }

    /// Whether `block` is what its chain's key would have written after its `previousMAC`.
    package static func isAuthentic(_ block: AuditBlock, key: HMACKey) -> Bool {
        let expected = mac(
            key: key, chain: block.chain, first: block.first, body: block.body, previous: block.previousMAC)
        return constantTimeEquals(expected, block.mac)
    }
}
