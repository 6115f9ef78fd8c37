import CloakTesting
import CloakVault
import Foundation
import Synchronization
import Testing

/// The store round trip in a trace (issue 44, item 8): each executor batch is a `vault batch`
/// span, a child of the vault call it serves when it serves one, and with one group commit
/// serving several, a span of its own linked to every vault call span it serves. Read from the
/// real OTLP export of a `cloak serve` on SQLite.
@Suite(.serialized, .tags(.racy, .processes, .sockets)) struct VaultBatchSpanTests {
    static let cards = ["4111111111111111", "5555555555554444", "4000056655665556", "378282246310005"]

    /// A caller's `traceparent` (sampled) in a trace of its own, numbered `n`.
    static func caller(_ n: Int) -> (trace: String, parent: String) {
        let trace = "4bf92f3577b34da6a3ce929d0e0e47" + String(format: "%02x", n)
        return (trace, "00-\(trace)-00f067aa0ba902b7-01")
    }

    static func node(collector: RawUpstream, directory: TemporaryDirectory) throws -> CloakNode {
        try CloakNode(store: "sqlite:\(directory.path)/cloak.db", directory: directory.path) { yaml in
            yaml + "\ntelemetry:\n  traces: {endpoint: \"http://127.0.0.1:\(collector.port)\", sample_ratio: 1.0}\n"
        }
    }

    static func create(_ node: CloakNode, card: String, caller n: Int) throws -> Int {
        try node.client().request(
            "POST", "/aliases", json: #"{"data":[{"value":"\#(card)","format":"UUID"}]}"#,
            headers: [("Authorization", "Bearer \(CloakNode.token)"), ("traceparent", caller(n).parent)]
        ).status
    }

    /// The batch spans that serve `call`: its children, or roots that link to it.
    static func batches(serving call: OTLPDecoding.Span, in spans: [OTLPDecoding.Span]) -> [OTLPDecoding.Span] {
        spans.filter {
            $0.name == "vault batch"
                && ($0.parentSpanID == call.spanID || $0.links.contains { $0.spanID == call.spanID })
        }
    }

    /// Whether the collector has the `vault create` span of each caller and a batch serving it.
    static func exported(callsOf callers: some Sequence<Int>, servedIn collector: RawUpstream) -> Bool {
        let spans = OTLPDecoding.spans(inHTTP: collector.bytes)
        return callers.allSatisfy { n in
            spans.first { $0.name == "vault create" && $0.traceID == Self.caller(n).trace }
                .map { !Self.batches(serving: $0, in: spans).isEmpty } ?? false
        }
    }

    @Test func aBatchServingOneCallIsThatCallsChildWithItsStatementsAndRows() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let collector = RawUpstream()
        defer { collector.stop() }
        let node = try Self.node(collector: collector, directory: directory)
        defer { node.stop() }

        #expect(try Self.create(node, card: Self.cards[0], caller: 1) == 201)

        // The call and its batch (they may leave in two exports).
        #expect(Poll.until { Self.exported(callsOf: [1], servedIn: collector) })
        let spans = OTLPDecoding.spans(inHTTP: collector.bytes)
        let call = try #require(spans.first { $0.name == "vault create" && $0.traceID == Self.caller(1).trace })
        let batch = try #require(Self.batches(serving: call, in: spans).first, "\(spans)")
        #expect(batch.parentSpanID == call.spanID && batch.traceID == call.traceID && batch.links.isEmpty)
        #expect(batch.kind == 3, "a client span (the store)")
        // Its one request's job (a credential refresh may share the round trip, untraced).
        #expect(Int(batch.attributes["cloak.vault.batch.jobs"] ?? "") ?? 0 >= 1)
        #expect(Int(batch.attributes["cloak.vault.batch.statements"] ?? "") ?? 0 > 0)
        #expect(Int(batch.attributes["cloak.vault.batch.rows"] ?? "") ?? 0 > 0, "the record and alias written")
        #expect(batch.attributes["cloak.vault.batch.failed_jobs"] == "0")
        #expect(batch.statusCode != 2)
        #expect(call.startNanoseconds <= batch.startNanoseconds && batch.startNanoseconds <= batch.endNanoseconds)
        #expect(collector.bytes.firstRange(of: Array(Self.cards[0].utf8)) == nil)
    }

    /// Three creates sent while another writer holds the store's lock, so the executor's first
    /// batch waits and the others queue behind it; however the three fall into batches (which
    /// no test can fix without sleeping), every call is served by exactly one batch span, a
    /// batch serving one call is that call's child, and a batch serving several (a group
    /// commit) is a root of its own, in none of their traces, linked to each call it serves and
    /// to nothing else. The executor's grouping itself is table-tested in `VaultBatchTraceTests`.
    @Test func aGroupCommitIsOneSpanLinkedToEveryCallItServes() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let collector = RawUpstream()
        defer { collector.stop() }
        let node = try Self.node(collector: collector, directory: directory)
        defer { node.stop() }
        #expect(try Self.create(node, card: Self.cards[0], caller: 1) == 201)  // the schema is there

        // Another writer holds the lock: the node's next batch waits (busy timeout, 5 s).
        let holder = try SQLiteAliasStore(path: "\(directory.path)/cloak.db")
        try holder.begin()
        let answers = Answers()
        for n in 2...4 { answers.send(n) { try Self.create(node, card: Self.cards[n - 1], caller: n) } }
        holder.rollback()
        #expect(answers.wait() == [2: 201, 3: 201, 4: 201])

        #expect(Poll.until { Self.exported(callsOf: 2...4, servedIn: collector) })
        let spans = OTLPDecoding.spans(inHTTP: collector.bytes)
        let calls = try (2...4).map { n in
            try #require(spans.first { $0.name == "vault create" && $0.traceID == Self.caller(n).trace })
        }
        for call in calls {
            let served = Self.batches(serving: call, in: spans)
            #expect(served.count == 1, "\(call)")
            guard let batch = served.first else { continue }
            let together = calls.filter { Self.batches(serving: $0, in: spans).first?.spanID == batch.spanID }
            #expect(Int(batch.attributes["cloak.vault.batch.jobs"] ?? "") ?? 0 >= together.count)
            #expect(Int(batch.attributes["cloak.vault.batch.statements"] ?? "") ?? 0 > 0)
            if together.count == 1 {
                #expect(batch.traceID == call.traceID && batch.parentSpanID == call.spanID, "\(batch)")
            } else {
                #expect(batch.isRoot && !calls.map(\.traceID).contains(batch.traceID), "\(batch)")
                #expect(Set(batch.links.map(\.spanID)) == Set(together.map(\.spanID)), "\(batch)")
                #expect(
                    batch.links.allSatisfy { link in
                        together.contains { $0.spanID == link.spanID && $0.traceID == link.traceID }
                    })
            }
        }

        let export = collector.bytes
        for secret in Self.cards + [CloakNode.token, CloakNode.masterKey] {
            #expect(export.firstRange(of: Array(secret.utf8)) == nil, "\(secret.prefix(4))… in the export")
        }
    }
}

/// Requests sent on threads of their own, and their statuses by name. `@unchecked Sendable`: the
/// statuses are behind a mutex; a `DispatchGroup` is thread-safe.
final class Answers: @unchecked Sendable {
    private let statuses = Mutex<[Int: Int]>([:])
    private let group = DispatchGroup()

    func send(_ name: Int, _ request: @escaping @Sendable () throws -> Int) {
        group.enter()
        Thread { [self] in
            let status = (try? request()) ?? -1
            statuses.withLock { $0[name] = status }
            group.leave()
        }.start()
    }

    /// Waits for every request sent; their statuses.
    func wait() -> [Int: Int] {
        group.wait()
        return statuses.withLock { $0 }
    }
}
