import CloakCrypto

/// One writer's chain of audit events: each event's MAC covers the one before, under a key
/// derived from the key ring (``keyPurpose``), so that someone who can write the database but has
/// no key can delete, alter, reorder or forge no event without `cloak audit verify` naming it.
/// A cut-off tail is seen against the head each writer logs (every minute and at stop:
/// `audit head`), which verify takes as `--heads`.
///
/// A chain is one vault thread of one process (its ``Identity``): only that thread appends to
/// it, one batch at a time, so the chain needs no lock and never forks. A batch that does not
/// commit gives its links back (``restore(_:)``).
package struct AuditChain: Sendable {
    /// The derived key's purpose (``CloakCrypto/KeyRing/derivedMAC(purpose:)``).
    package static let keyPurpose = "audit-chain"
    /// The MAC before a chain's first event.
    package static let origin = [UInt8](repeating: 0, count: 32)

    /// The chain's name: the node, this process's start, the writer (`host:port/boot/n`).
    package let id: String
    /// The last event's place (0: none yet) and MAC.
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

    /// Goes on after `event`, the chain's last in the store (read back after a commit whose
    /// outcome was not known).
    package mutating func resume(after event: AuditEvent) {
        seq = event.seq
        head = event.mac
    }

    /// The next links of the chain, one per draft, in order.
    package mutating func seal(_ drafts: [AuditEvent.Draft]) -> [AuditEvent] {
        drafts.map { draft in
            seq += 1
            let mac = Self.mac(key: key, chain: id, seq: seq, draft: draft, previous: head)
            defer { head = mac }
            return AuditEvent(chain: id, seq: seq, draft: draft, previousMAC: head, mac: mac)
        }
    }

    /// The MAC of an event: its chain, place, every field of its draft, length-prefixed (a field
    /// cannot run into the next), and the MAC before it.
    package static func mac(key: HMACKey, chain: String, seq: Int64, draft: AuditEvent.Draft, previous: [UInt8])
        -> [UInt8]
    {
        var message = MessageBytes(capacity: 160 + chain.utf8.count + draft.facts.count * 24)
        message.append(Self.domain)
        message.field(chain)
        message.integer(seq)
        message.integer(draft.at)
        message.field(draft.action)
        message.field(draft.tokenID)
        message.field(draft.client)
        message.field(draft.aliasReference)
        message.field(draft.result)
        message.integer(Int64(draft.facts.count))
        for fact in draft.facts {
            message.field(fact.key)
            message.field(fact.value)
        }
        message.append(previous)
        return key.authenticate(message.bytes)
    }

    private static let domain = Array("cloak/v1/audit-event\0".utf8)

    /// The MAC's input, written field by field into one buffer.
    private struct MessageBytes {
        var bytes: [UInt8]

        init(capacity: Int) {
            bytes = []
            bytes.reserveCapacity(capacity)
        }

        mutating func append(_ more: [UInt8]) { bytes.append(contentsOf: more) }

        mutating func integer(_ value: Int64) {
            var big = value.bigEndian
            withUnsafeBytes(of: &big) { bytes.append(contentsOf: $0) }
        }

        mutating func field(_ text: String?) {
            guard var text else { return integer(-1) }
            integer(Int64(text.utf8.count))
            text.withUTF8 { bytes.append(contentsOf: $0) }
        }
    }

    /// Whether `event` is authentic under this chain's key.
    package func isAuthentic(_ event: AuditEvent) -> Bool { Self.isAuthentic(event, key: key) }

    /// Whether `event` is what its chain's key would have written after `previous`.
    package static func isAuthentic(_ event: AuditEvent, key: HMACKey) -> Bool {
        let expected = mac(
            key: key, chain: event.chain, seq: event.seq, draft: event.draft, previous: event.previousMAC)
        return constantTimeEquals(expected, event.mac)
    }
}
