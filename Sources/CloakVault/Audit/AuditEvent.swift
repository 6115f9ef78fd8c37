import CloakCore

/// One audited action, as the store keeps it: who (token id, client address), what (the action),
/// on which alias (its keyed reference, ``Vault/auditReference(_:)``: never the alias, never the
/// value), the result and a few named facts: the fields of the `audit` log line, and nothing
/// else. Each event has a place in its writer's chain (`chain`, `seq`) and is sealed with the
/// others its commit wrote (``AuditBlock``), so that a deleted, altered or reordered event is
/// seen by `cloak audit verify`.
package struct AuditEvent: Sendable, Equatable {
    /// What the event says, before it is chained: made by whoever audits (a request's
    /// ``Outcome``, a job, a command, the vault), written as the `audit` log line and sealed by
    /// the store's writer. The one type of an audit event on its way (issue 76).
    package struct Draft: Sendable, Equatable {
        /// Milliseconds since the epoch.
        package var at: Int64
        package var action: AuditAction
        package var tokenID: String
        package var client: String
        package var aliasReference: String?
        package var result: AuditResult
        /// Named facts in the order given (`via`, `subject`, `count`, …): short texts, never a
        /// value, an alias of a revealed value or a secret.
        package var facts: [Fact]

        package init(
            at: Int64, action: AuditAction, tokenID: String, client: String, aliasReference: String? = nil,
            result: AuditResult, facts: [Fact] = []
        ) {
            self.at = at
            self.action = action
            self.tokenID = tokenID
            self.client = client
            self.aliasReference = aliasReference
            self.result = result
            self.facts = facts
        }

        /// An event being made now (or at `at`): its facts given as pairs and scrubbed where they
        /// are caller text (``Fact/made(_:_:)``).
        package init(
            made action: AuditAction, tokenID: String, client: String, aliasReference: String? = nil,
            result: AuditResult, facts: [(String, String)] = [], at: Int64 = VaultAuditing.nowMilliseconds()
        ) {
            self.init(
                at: at, action: action, tokenID: tokenID, client: client, aliasReference: aliasReference,
                result: result, facts: facts.map { Fact.made($0.0, $0.1) })
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

        /// Facts whose values are caller text (an id a request named, a search's filter, a
        /// file's name, a person, a failure's reason): scrubbed as an event is made (review V,
        /// item 7: a Luhn-valid card number given as a token id was kept in `tokens_create`,
        /// `tokens_adopt` and `audit_read` events). Never every fact: a digest or fingerprint in
        /// hex holds nine digits in a row more often than not.
        package static let callerText: Set<String> = [
            "subject", "added", "removed", "replaced", "descendants", "signed", "token", "action", "result",
            "alias_ref", "file", "reason", "person", "requester", "requester_person", "approver", "approver_person",
            "owner", "by",
            "map", "ignore_columns",
        ]

        /// `value` as an event being made keeps it: scrubbed (``Redaction/scrub(_:limit:)``) when
        /// `key` is one of ``callerText``. Stored events are read back with ``init(_:_:)``.
        package static func scrubbed(_ key: String, _ value: String) -> String {
            callerText.contains(key) ? Redaction.scrub(value, limit: 256) : value
        }

        /// A fact of an event being made, its value scrubbed when it is caller text.
        package static func made(_ key: String, _ value: String) -> Fact {
            Fact(key, scrubbed(key, value))
        }
    }

    /// The writer's chain: one per vault thread of one process (``AuditChain``).
    package var chain: String
    /// The event's place in its chain, from 1, without gaps.
    package var seq: Int64
    package var draft: Draft

    package init(chain: String, seq: Int64, draft: Draft) {
        self.chain = chain
        self.seq = seq
        self.draft = draft
    }
}
