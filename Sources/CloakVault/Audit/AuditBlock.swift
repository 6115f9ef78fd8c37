/// The events one commit appended to one chain, as the store keeps them: one row and one MAC
/// for the lot (``AuditChain/seal(_:)``), where one row and one MAC an event cost a create a
/// third of its CPU (Benchmarks/README.md, issue 59). The events are packed into ``body``
/// (``AuditBlockBody``), which is what the MAC covers; the other columns a store keeps beside
/// it (places, times) only find blocks and are checked against the body when read.
package struct AuditBlock: Sendable, Equatable {
    /// The writer's chain (``AuditChain/id``).
    package var chain: String
    /// The place of the block's first event in its chain (from 1).
    package var first: Int64
    /// The events, packed (``AuditBlockBody``).
    package var body: [UInt8]
    /// The MAC of the block before it in its chain (32 zero bytes for the first).
    package var previousMAC: [UInt8]
    /// HMAC-SHA-256 over the chain, ``first``, ``body`` and ``previousMAC`` (``AuditChain``).
    package var mac: [UInt8]

    /// The summary, when the block was sealed here (its events known, not decoded again).
    private var sealed: Summary?

    package init(chain: String, first: Int64, body: [UInt8], previousMAC: [UInt8], mac: [UInt8]) {
        self.chain = chain
        self.first = first
        self.body = body
        self.previousMAC = previousMAC
        self.mac = mac
    }

    /// A block just sealed from `drafts` (``AuditChain/seal(_:)``).
    init(
        chain: String, first: Int64, drafts: ArraySlice<AuditEvent.Draft>, previousMAC: [UInt8], mac: [UInt8],
        body: [UInt8]
    ) {
        self.init(chain: chain, first: first, body: body, previousMAC: previousMAC, mac: mac)
        sealed = Self.summarize(first: first, drafts)
    }

    /// Equal when the stored parts are (a block read back equals the one written).
    package static func == (a: AuditBlock, b: AuditBlock) -> Bool {
        a.chain == b.chain && a.first == b.first && a.body == b.body && a.previousMAC == b.previousMAC && a.mac == b.mac
    }

    /// The events, or nil when the body does not decode or their places would not fit (a row
    /// someone wrote: its MAC fails too).
    package var drafts: [AuditEvent.Draft]? {
        guard let drafts = AuditBlockBody.decode(body), Self.fits(first: first, count: drafts.count) else { return nil }
        return drafts
    }

    /// Whether `count` events from place `first` are places of a chain (from 1, within Int64):
    /// a row's `first_seq` is not trusted before its MAC is checked.
    static func fits(first: Int64, count: Int) -> Bool { first >= 1 && first <= Int64.max - Int64(count) }

    /// The events with their places; none when the body does not decode.
    package var events: [AuditEvent] {
        (drafts ?? []).enumerated().map { AuditEvent(chain: chain, seq: first + Int64($0.offset), draft: $0.element) }
    }

    /// What a store keeps beside the body to find the block: its last place, its earliest and
    /// latest event times (events are stamped when made, so times need not rise along a
    /// block), and the alias references it names.
    package struct Summary: Sendable, Equatable {
        package var last: Int64
        package var firstAt: Int64
        package var lastAt: Int64
        package var aliasReferences: [String]
    }

    /// The summary, from the events; nil for a body that does not decode or holds none.
    package var summary: Summary? {
        if let sealed { return sealed }
        return drafts.flatMap { Self.summarize(first: first, $0[...]) }
    }

    private static func summarize(first: Int64, _ drafts: ArraySlice<AuditEvent.Draft>) -> Summary? {
        guard !drafts.isEmpty, fits(first: first, count: drafts.count) else { return nil }
        var firstAt = Int64.max, lastAt = Int64.min
        var references: [String] = []
        for draft in drafts {
            firstAt = min(firstAt, draft.at)
            lastAt = max(lastAt, draft.at)
            if let reference = draft.aliasReference, !references.contains(reference) { references.append(reference) }
        }
        return Summary(
            last: first + Int64(drafts.count) - 1, firstAt: firstAt, lastAt: lastAt, aliasReferences: references)
    }

    /// The longest a block's events may span in time (milliseconds): a search seeks blocks by
    /// their latest event and must know how far back from it their earliest can be, and a page
    /// after the first reads again the blocks of one span above where it starts. A commit's
    /// events are stamped within its batch, well inside it; after a stall, a batch is sealed as
    /// several blocks.
    package static let maxSpanMilliseconds: Int64 = 2_000
}

/// A block read back with the store's own columns for it: the order blocks are searched in
/// (latest event time, then ``id``, newest first) and how a page of blocks goes on. None of them
/// is under the MAC: verify checks each against the events (``AuditVerifier``).
package struct StoredAuditBlock: Sendable, Equatable {
    /// The store's row key: unique, rising in insertion order.
    package var id: Int64
    /// The latest event time the store keeps for it (``AuditBlock/Summary/lastAt``).
    package var lastAt: Int64
    /// The last event's place the store keeps for it (``AuditBlock/Summary/last``).
    package var lastSeq: Int64
    package var block: AuditBlock

    package init(id: Int64, lastAt: Int64, lastSeq: Int64, block: AuditBlock) {
        self.id = id
        self.lastAt = lastAt
        self.lastSeq = lastSeq
        self.block = block
    }

    /// Where a newest-first read of blocks goes on: blocks ordered before this one.
    package var position: AuditBlockPosition { AuditBlockPosition(lastAt: lastAt, id: id) }
}

/// A place in the newest-first order of blocks: (latest event time, row key), descending.
package struct AuditBlockPosition: Sendable, Equatable {
    package var lastAt: Int64
    package var id: Int64

    package init(lastAt: Int64, id: Int64) {
        self.lastAt = lastAt
        self.id = id
    }
}

/// The packed form of a block's events: a count, then each event's time, action, token,
/// client, alias reference (or none), result and facts, integers big-endian, texts
/// length-prefixed, so that no field can run into the next and one set of bytes has one
/// reading. It is also the MAC's input (``AuditChain``).
package enum AuditBlockBody {
    /// The most events one block holds (a batch of more is sealed as several blocks).
    package static let maxEvents = 4096

    package static func encode(_ drafts: some Collection<AuditEvent.Draft>) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(8 + drafts.count * 160)
        put(UInt32(drafts.count), into: &out)
        for draft in drafts {
            put(UInt64(bitPattern: draft.at), into: &out)
            put(draft.action.text, into: &out)
            put(draft.tokenID, into: &out)
            put(draft.client, into: &out)
            put(draft.aliasReference, into: &out)
            put(draft.result.text, into: &out)
            put(UInt32(draft.facts.count), into: &out)
            for fact in draft.facts {
                put(fact.key, into: &out)
                put(fact.value, into: &out)
            }
        }
        return out
    }

    /// The events; nil unless `bytes` is exactly one encoding (no trailing byte, no text that
    /// is not UTF-8, no length past the end).
    package static func decode(_ bytes: [UInt8]) -> [AuditEvent.Draft]? {
        bytes.withUnsafeBufferPointer { buffer in
            var reader = Reader(bytes: buffer)
            guard let count = reader.u32(), count <= maxEvents else { return nil }
            var drafts: [AuditEvent.Draft] = []
            drafts.reserveCapacity(Int(count))
            for _ in 0..<count {
                guard let at = reader.u64(), let action = reader.text(), let token = reader.text(),
                    let client = reader.text(), let reference = reader.optionalText(), let result = reader.text(),
                    let factCount = reader.u32(), factCount <= 256
                else { return nil }
                var facts: [AuditEvent.Fact] = []
                for _ in 0..<factCount {
                    guard let key = reader.text(), let value = reader.text() else { return nil }
                    facts.append(AuditEvent.Fact(key, value))
                }
                drafts.append(
                    AuditEvent.Draft(
                        at: Int64(bitPattern: at), action: AuditAction(stored: action), tokenID: token,
                        client: client, aliasReference: reference, result: AuditResult(stored: result), facts: facts))
            }
            return reader.atEnd ? drafts : nil
        }
    }

    /// The alias references a body names, as index keys (``AuditReferenceKey``), each once,
    /// read without making its events (the alias index's upkeep); nil when the body does not
    /// decode. A reference that is not `ar_` and 16 hex digits has no key and is not indexed (an
    /// alias search reads such a block only while it is not indexed yet).
    package static func aliasReferenceKeys(_ bytes: [UInt8]) -> [Int64]? {
        bytes.withUnsafeBufferPointer { buffer in
            var reader = Reader(bytes: buffer)
            guard let count = reader.u32(), count <= maxEvents else { return nil }
            var keys: [Int64] = []
            for _ in 0..<count {
                guard reader.skip(8), reader.skipText(), reader.skipText(), reader.skipText(),
                    let key = reader.referenceKey(), reader.skipText(), let facts = reader.u32(), facts <= 256
                else { return nil }
                for _ in 0..<(facts * 2) { guard reader.skipText() else { return nil } }
                if let key, !keys.contains(key) { keys.append(key) }
            }
            return reader.atEnd ? keys : nil
        }
    }

    /// A text's length that stands for "none" (an event without an alias reference).
    private static let none = UInt32.max

    private static func put(_ value: UInt32, into out: inout [UInt8]) {
        out.append(UInt8(truncatingIfNeeded: value >> 24))
        out.append(UInt8(truncatingIfNeeded: value >> 16))
        out.append(UInt8(truncatingIfNeeded: value >> 8))
        out.append(UInt8(truncatingIfNeeded: value))
    }

    private static func put(_ value: UInt64, into out: inout [UInt8]) {
        put(UInt32(truncatingIfNeeded: value >> 32), into: &out)
        put(UInt32(truncatingIfNeeded: value), into: &out)
    }

    private static func put(_ text: String?, into out: inout [UInt8]) {
        guard var text else { return put(none, into: &out) }
        put(UInt32(text.utf8.count), into: &out)
        text.withUTF8 { out.append(contentsOf: $0) }
    }

    private struct Reader {
        let bytes: UnsafeBufferPointer<UInt8>
        var at = 0

        var atEnd: Bool { at == bytes.count }

        mutating func u32() -> UInt32? {
            guard bytes.count - at >= 4 else { return nil }
            defer { at += 4 }
            return UInt32(bytes[at]) << 24 | UInt32(bytes[at + 1]) << 16 | UInt32(bytes[at + 2]) << 8
                | UInt32(bytes[at + 3])
        }

        mutating func skip(_ count: Int) -> Bool {
            guard bytes.count - at >= count else { return false }
            at += count
            return true
        }

        /// Past a text, without reading it (nor checking it is UTF-8: only ``decode(_:)``
        /// makes events, and a MAC covers the bytes either way).
        mutating func skipText() -> Bool {
            guard let length = u32(), length != AuditBlockBody.none else { return false }
            return skip(Int(length))
        }

        /// An optional text read as an alias reference's key: `.some(nil)` for none or a text
        /// that is not a reference; nil when the bytes end.
        mutating func referenceKey() -> Int64?? {
            guard bytes.count - at >= 4 else { return nil }
            let length = u32Peek()
            at += 4
            if length == AuditBlockBody.none { return .some(nil) }
            guard Int(length) <= bytes.count - at else { return nil }
            defer { at += Int(length) }
            return .some(AuditReferenceKey.key(UnsafeBufferPointer(rebasing: bytes[at..<(at + Int(length))])))
        }

        mutating func u64() -> UInt64? {
            guard let high = u32(), let low = u32() else { return nil }
            return UInt64(high) << 32 | UInt64(low)
        }

        mutating func optionalText() -> String?? {
            guard bytes.count - at >= 4 else { return nil }
            if u32Peek() == AuditBlockBody.none {
                at += 4
                return .some(nil)
            }
            return text().map { .some($0) }
        }

        mutating func text() -> String? {
            guard let length = u32(), length != AuditBlockBody.none, Int(length) <= bytes.count - at else { return nil }
            defer { at += Int(length) }
            return String(validating: UnsafeBufferPointer(rebasing: bytes[at..<(at + Int(length))]), as: UTF8.self)
        }

        private func u32Peek() -> UInt32 {
            UInt32(bytes[at]) << 24 | UInt32(bytes[at + 1]) << 16 | UInt32(bytes[at + 2]) << 8 | UInt32(bytes[at + 3])
        }
    }
}

/// An alias reference (`ar_` and 16 hex digits: 64 bits of a MAC, ``Vault/auditReference(_:)``)
/// as the alias index keeps it: the 64 bits as an integer, which a B-tree compares and stores
/// in a third of the text's room.
package enum AuditReferenceKey {
    package static func key(_ reference: String) -> Int64? {
        var reference = reference
        return reference.withUTF8 { key($0) }
    }

    static func key(_ bytes: UnsafeBufferPointer<UInt8>) -> Int64? {
        guard bytes.count == 19, bytes[0] == UInt8(ascii: "a"), bytes[1] == UInt8(ascii: "r"),
            bytes[2] == UInt8(ascii: "_")
        else { return nil }
        var value: UInt64 = 0
        for byte in bytes[3...] {
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            default: return nil
            }
            value = value << 4 | UInt64(digit)
        }
        return Int64(bitPattern: value)
    }
}
