import CloakCore

/// One audited action, as the store keeps it: who (token id, client address), what (the action),
/// on which alias (its keyed reference, ``Vault/auditReference(_:)``: never the alias, never the
/// value), the result and a few named facts: the fields of the `audit` log line, and nothing
/// else. Each event is a link of its writer's chain (``AuditChain``): its place (`chain`, `seq`),
/// the previous link's MAC and its own, so that a deleted, altered or reordered event is seen by
/// `cloak audit verify`.
package struct AuditEvent: Sendable, Equatable {
    /// What the event says, before it is chained: made by whoever audits, sealed by the writer.
    package struct Draft: Sendable, Equatable {
        /// Milliseconds since the epoch.
        package var at: Int64
        package var action: String
        package var tokenID: String
        package var client: String
        package var aliasReference: String?
        package var result: String
        /// Named facts in the order given (`via`, `subject`, `count`, …): short texts, never a
        /// value, an alias of a revealed value or a secret.
        package var facts: [Fact]

        package init(
            at: Int64, action: String, tokenID: String, client: String, aliasReference: String? = nil,
            result: String, facts: [Fact] = []
        ) {
            self.at = at
            self.action = action
            self.tokenID = tokenID
            self.client = client
            self.aliasReference = aliasReference
            self.result = result
            self.facts = facts
        }

        /// The fact named `key`, when the event has one.
        package func fact(_ key: String) -> String? { facts.first { $0.key == key }?.value }
    }

    package struct Fact: Sendable, Equatable {
        package var key: String
        package var value: String

        package init(_ key: String, _ value: String) {
            self.key = key
            self.value = value
        }
    }

    /// The writer's chain: one per vault thread of one process (``AuditChain/Identity``).
    package var chain: String
    /// The event's place in its chain, from 1, without gaps.
    package var seq: Int64
    package var draft: Draft
    /// The MAC of the event before it in its chain (32 zero bytes for the first).
    package var previousMAC: [UInt8]
    /// HMAC-SHA-256 over the chain, the place, the draft and `previousMAC` (``AuditChain``).
    package var mac: [UInt8]

    package init(chain: String, seq: Int64, draft: Draft, previousMAC: [UInt8], mac: [UInt8]) {
        self.chain = chain
        self.seq = seq
        self.draft = draft
        self.previousMAC = previousMAC
        self.mac = mac
    }

    /// The facts as the store keeps them: one JSON object of strings, in order.
    package static func encodeFacts(_ facts: [Fact]) -> String {
        JSONWriter.string(.object(facts.map { (key: $0.key, value: .string($0.value)) }))
    }

    /// Facts read back from the store; a column that is not an object of strings reads as none
    /// (the event's MAC then fails, which is how verify learns of it).
    package static func decodeFacts(_ text: String) -> [Fact] {
        guard let members = (try? JSONParser().parse(text))?.objectMembers else { return [] }
        return members.compactMap { member in member.value.stringValue.map { Fact(member.key, $0) } }
    }
}
