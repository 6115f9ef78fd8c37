import CloakCore
import CloakTesting
import Foundation
import Testing

@testable import CloakService

/// Review V, item 5: a node's guess windows survive a restart. After kill -9 or SIGTERM a bucket
/// limited to 3 values an hour took 3 more each time; now a sealed snapshot in the store
/// (at most every 10 s, and at stop) is replayed at start.
@Suite(.serialized, .tags(.racy, .processes, .sockets))
struct GuessWindowsKeeperTests {
    /// A snapshot replayed into a new limiter gives the same windows: the counts, the values held,
    /// one given back (a lookup's hit) not held, the presenters' caps, and the hour kept.
    @Test func aSnapshotReplaysTheSameWindows() throws {
        let cards = try BucketGuessLimiterTests.buckets(TestCards.cards(4)).map { $0.first! }
        let t0: UInt64 = 5_000 * BucketGuessLimiterTests.second
        let before = BucketGuessLimiter(bucketCap: 3)
        #expect(before.admit(token: "a", presenter: "a-child", Array(cards.prefix(2)), limit: 3, now: t0) == nil)
        let (_, recorded) = before.admitRecording(token: "a", [cards[2]], limit: 3, now: t0 + 1)
        before.release(token: "a", recorded)  // a hit: given back, its record still charged
        // Written at Unix time 1,800,000,000 when this host's limiter clock read 5,010 s.
        let written = GuessWindowsSnapshot.Clock(uptime: 5_010, unix: 1_800_000_000)
        let bytes = GuessWindowsSnapshot.encode(before.kept(), clock: written)
        // Read back 90 s later on another boot, whose limiter clock reads 100 s: the values seen
        // 10 s before the write are at its second 0.
        let after = BucketGuessLimiter(bucketCap: 3)
        let decoded = try #require(
            GuessWindowsSnapshot.decode(bytes, clock: .init(uptime: 100, unix: 1_800_000_090)))
        #expect(decoded.writtenAt == 1_800_000_000)
        #expect(after.restore(decoded.accounts, now: 200 * BucketGuessLimiterTests.second) == 3)
        #expect(after.memoryUsed == before.memoryUsed)
        // The same records, each charged to its presenter, held or given back as before.
        #expect(after.kept().first?.records.map(\.presenter) == ["a-child", "a-child", "a"])
        #expect(after.kept().first?.records.map(\.held) == before.kept().first?.records.map(\.held))
        let now: UInt64 = 200 * BucketGuessLimiterTests.second
        // Two held in the bucket, the one given back not: one more fits, then the limit.
        #expect(after.admit(token: "a", [cards[3]], limit: 3, now: now) == nil)
        #expect(after.admit(token: "a", [cards[2]], limit: 3, now: now)?.limit == .valuesPerBucket)
        // The hour runs from when the values were seen, not from the restore.
        #expect(after.admit(token: "a", [cards[2]], limit: 3, now: now + 3_600 * BucketGuessLimiterTests.second) == nil)
        // Bytes that do not read are refused whole.
        #expect(GuessWindowsSnapshot.decode(Array(bytes.dropLast()), clock: written) == nil)
        #expect(GuessWindowsSnapshot.decode(Array("CGW2".utf8) + bytes.dropFirst(4), clock: written) == nil)
    }

    /// A node killed with SIGKILL once its snapshot was written, and one stopped with SIGTERM,
    /// start again counting what their token aliased in the hour: the bucket stays full.
    @Test func aRestartKeepsABucketsCount() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = "sqlite:\(directory.path)/cloak.db"
        func node() throws -> CloakNode {
            try CloakNode(
                store: store, directory: directory.path, tokenID: "creator", scopes: "aliases:create",
                configure: {
                    $0.replacingOccurrences(of: "bucket_values_per_hour: 30 ", with: "bucket_values_per_hour: 3 ")
                })
        }
        func create(_ node: CloakNode, _ card: String) throws -> Int {
            try node.client().request(
                "POST", "/aliases", json: #"{"data":[{"value":"\#(card)","format":"FPE_SIX_T_FOUR"}]}"#,
                headers: [("Authorization", "Bearer \(CloakNode.token)")]
            ).status
        }
        let cards = TestCards.cards(6)
        var first = try node()
        for card in cards.prefix(3) { #expect(try create(first, card) == 201) }
        #expect(try create(first, cards[3]) == 429)
        // kill -9 once the snapshot is in the store (at most 10 s after the change).
        try ImportJobTests().poll(timeout: 30) {
            try ExportJobTests.sqliteText(directory, "SELECT count(*) FROM meta WHERE name = 'guess_windows.local'")
                .hasPrefix("1")
        }
        first.kill9()
        first = try node()
        // Its log says so (written by the log's own thread: polled for).
        try ImportJobTests().poll(timeout: 10) { first.log.contains("guess windows restored") }
        #expect(try create(first, cards[4]) == 429, "kill -9 forgot the bucket's count")
        first.stop()
        let second = try node()
        defer { second.stop() }
        #expect(try create(second, cards[5]) == 429, "SIGTERM forgot the bucket's count")
        // Values already counted are still taken (they do not count again).
        #expect(try create(second, cards[0]) == 201)
    }
}
