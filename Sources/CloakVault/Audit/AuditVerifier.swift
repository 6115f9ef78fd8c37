import CloakCrypto

/// Checks audit chains as `cloak audit verify` reads them: every block authentic
/// (``AuditChain/isAuthentic(_:key:)``) and readable, each chain without a gap from its start, each start
/// either the chain's first event or where the retention sweep's last trim said it would be
/// (``AuditTrim``), and each head a writer logged still there with its MAC. The first break
/// found is the answer, named by chain and place (a block's first event); nothing of an event's
/// content is quoted.
///
/// Pure: blocks come in chain by chain, in place order (``add(_:)``), then ``finish()``.
package struct AuditVerifier {
    /// A head a writer logged (`audit head`): the chain held at least `seq` events, the last
    /// with `mac`.
    package struct Head: Sendable, Equatable {
        package var chain: String
        package var seq: Int64
        package var mac: [UInt8]

        package init(chain: String, seq: Int64, mac: [UInt8]) {
            self.chain = chain
            self.seq = seq
            self.mac = mac
        }
    }

    /// The first thing wrong.
    package struct Break: Error, Sendable, Equatable, CustomStringConvertible {
        package var chain: String
        package var seq: Int64
        package var reason: String
        package var description: String { "chain \(chain), event \(seq): \(reason)" }
    }

    private struct Span {
        var first: Int64
        var last: Int64
        var lastMAC: [UInt8]
        var firstPrevious: [UInt8]
    }

    private let key: HMACKey
    private let heads: [String: [Head]]
    private var spans: [String: Span] = [:]
    private var current: String?
    /// Each chain's start as the trims recorded it: the largest place (starts only grow).
    private var starts: [String: AuditTrim.Start] = [:]
    package private(set) var events = 0

    package init(key: HMACKey, heads: [Head] = []) {
        self.key = key
        self.heads = Dictionary(grouping: heads, by: \.chain)
    }

    /// The next block (chain by chain, each in place order), as the store keeps it: its
    /// stored latest time must be its events' (a search finds blocks by it).
    package mutating func add(_ stored: StoredAuditBlock) throws(Break) {
        let block = stored.block
        guard AuditChain.isAuthentic(block, key: key) else {
            throw Break(chain: block.chain, seq: block.first, reason: "its MAC does not match (altered or forged)")
        }
        guard let drafts = block.drafts, let summary = block.summary else {
            throw Break(chain: block.chain, seq: block.first, reason: "its events cannot be read")
        }
        guard summary.lastAt == stored.lastAt, summary.last == stored.lastSeq else {
            throw Break(
                chain: block.chain, seq: block.first,
                reason: "the time or place it is found by is not its events' (altered)")
        }
        events += drafts.count
        if var span = spans[block.chain] {
            guard current == block.chain else {
                throw Break(chain: block.chain, seq: block.first, reason: "the chain was read out of order")
            }
            guard block.first == span.last + 1 else {
                throw Break(
                    chain: block.chain, seq: span.last + 1,
                    reason: "missing (the chain jumps from \(span.last) to \(block.first))")
            }
            guard block.previousMAC == span.lastMAC else {
                throw Break(chain: block.chain, seq: block.first, reason: "it does not follow the event before it")
            }
            span.last = summary.last
            span.lastMAC = block.mac
            spans[block.chain] = span
        } else {
            spans[block.chain] = Span(
                first: block.first, last: summary.last, lastMAC: block.mac, firstPrevious: block.previousMAC)
            current = block.chain
        }
        for head in heads[block.chain] ?? [] where (block.first...summary.last).contains(head.seq) {
            guard head.seq == summary.last, head.mac == block.mac else {
                throw Break(chain: block.chain, seq: head.seq, reason: "it is not the event the logged head names")
            }
        }
        for draft in drafts {
            guard let trim = AuditTrim(draft) else { continue }
            for (chain, start) in trim.starts {
                guard let known = starts[chain], known.first >= start.first else {
                    starts[chain] = start
                    continue
                }
                if known.first == start.first && start.gone { starts[chain]?.gone = true }
            }
        }
    }

    /// Checks each chain's start and every logged head, once all events are in.
    package func finish() throws(Break) {
        for chain in spans.keys.sorted() {
            let span = spans[chain]!
            if span.first == 1 {
                guard span.firstPrevious == AuditChain.origin else {
                    throw Break(chain: chain, seq: 1, reason: "the first event does not start a chain")
                }
                continue
            }
            guard let start = starts[chain] else {
                throw Break(
                    chain: chain, seq: span.first - 1,
                    reason: "missing (the chain starts at \(span.first) and no trim removed what came before)")
            }
            guard start.first == span.first else {
                throw Break(
                    chain: chain, seq: min(start.first, span.first),
                    reason: "the chain starts at \(span.first), the last trim left it starting at \(start.first)")
            }
        }
        for (chain, start) in starts.sorted(by: { $0.key < $1.key }) where spans[chain] == nil && !start.gone {
            throw Break(
                chain: chain, seq: start.first, reason: "missing (a trim kept this chain from here; none is left)")
        }
        for (chain, logged) in heads.sorted(by: { $0.key < $1.key }) {
            for head in logged {
                guard let span = spans[chain] else {
                    // A chain the sweep emptied past its logged head is gone, not cut off.
                    if let start = starts[chain], start.gone, head.seq < start.first { continue }
                    throw Break(
                        chain: chain, seq: head.seq, reason: "missing (a logged head names it; the chain is gone)")
                }
                guard span.last >= head.seq else {
                    throw Break(
                        chain: chain, seq: head.seq,
                        reason: "missing (a logged head names it; the chain was cut off before it)")
                }
                if head.seq < span.first, starts[chain] == nil {
                    throw Break(chain: chain, seq: head.seq, reason: "missing (a logged head names it)")
                }
            }
        }
    }
}

/// What the retention sweep's event says (action ``action``): for each chain it removed events
/// from, the place of its first event left (`chain:ID` → `N`), or, when none is left, the place
/// its next one would take (`gone N`). A sweep only ever removes a chain's oldest events, so a
/// chain's start only grows: the largest any trim recorded is where it starts now.
package struct AuditTrim: Sendable, Equatable {
    package static let action = AuditAction.auditTrim
    static let prefix = "chain:"

    package struct Start: Sendable, Equatable {
        package var first: Int64
        package var gone: Bool

        package init(first: Int64, gone: Bool) {
            self.first = first
            self.gone = gone
        }
    }

    package var starts: [String: Start]

    package init(starts: [String: Start]) { self.starts = starts }

    init?(_ draft: AuditEvent.Draft) {
        guard draft.action == Self.action else { return nil }
        var starts: [String: Start] = [:]
        for fact in draft.facts where fact.key.hasPrefix(Self.prefix) {
            let gone = fact.value.hasPrefix("gone ")
            guard let first = Int64(gone ? String(fact.value.dropFirst(5)) : fact.value) else { continue }
            starts[String(fact.key.dropFirst(Self.prefix.count))] = Start(first: first, gone: gone)
        }
        self.starts = starts
    }

    /// The facts of the trim's event, chains in name order.
    package var facts: [AuditEvent.Fact] {
        starts.sorted { $0.key < $1.key }.map { chain, start in
            AuditEvent.Fact(Self.prefix + chain, (start.gone ? "gone " : "") + String(start.first))
        }
    }
}
