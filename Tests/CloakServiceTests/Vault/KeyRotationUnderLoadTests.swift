import CloakService
import CloakTesting
import Foundation
import Synchronization
import Testing

/// Issue 34, defect 1: `cloak keys rotate` and at once `cloak keys rewrap` while two nodes on one
/// PostgreSQL database serve reveals and creates. Neither node has picked up the rotation (their
/// `vault.key_refresh_s` is an hour here): each must read the store's ring when a record names
/// the new version, and no request may fail.
@Suite(
    .serialized,
    .enabled(if: PostgresTestCluster.isAvailable, "needs CLOAK_TEST_POSTGRES_URL (scripts/test starts a cluster)"),
    .tags(.postgres, .processes))
struct KeyRotationUnderLoadTests {
    @Test func rotateThenRewrapUnderLoadFailsNoRequestOnEitherNode() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = try PostgresTestCluster.freshDatabase()
        let slowRefresh = ["CLOAK_VAULT_KEY_REFRESH_S": "3600"]
        let a = try CloakNode(store: store, directory: directory.path, environment: slowRefresh)
        defer { a.stop() }
        let b = try CloakNode(store: store, directory: directory.path, environment: slowRefresh)
        defer { b.stop() }
        let values = MultiNodeTests.cards(120, seed: 7)
        var aliased: [(value: String, alias: String)] = []
        for value in values {
            aliased.append((value, try #require(MultiNodeTests.alias(value, on: a))))
        }
        let stored = aliased

        // The load: reveals of every stored alias and creates of new cards on both nodes.
        let failures = Mutex<[String]>([])
        let requests = Atomic<Int>(0)
        let stop = Atomic<Bool>(false)
        let load = Thread {
            DispatchQueue.concurrentPerform(iterations: 4) { worker in
                let node = worker % 2 == 0 ? a : b
                var round = 0
                while !stop.load(ordering: .relaxed) {
                    let (value, alias) = stored[(round * 4 + worker) % stored.count]
                    if MultiNodeTests.reveal(alias, on: node) != value {
                        failures.withLock { $0.append("reveal on \(node.port)") }
                    }
                    let card = MultiNodeTests.cards(1, seed: 100 + worker * 1000 + round)[0]
                    if round % 5 == 0, MultiNodeTests.alias(card, on: node) == nil {
                        failures.withLock { $0.append("create on \(node.port)") }
                    }
                    requests.add(1, ordering: .relaxed)
                    round += 1
                }
            }
        }
        load.start()
        defer { stop.store(true, ordering: .relaxed) }
        while requests.load(ordering: .relaxed) < 40 { usleep(10_000) }

        var settings = ServiceConfiguration.VaultSettings()
        settings.store = store
        settings.keys = "env:CLOAK_MASTER_KEY"
        let environment = ["CLOAK_MASTER_KEY": CloakNode.masterKey]
        let admin = {
            KeyAdministration(
                settings: settings, environment: environment, store: try VaultBootstrap.store(settings), user: "tester")
        }
        let rotation = try admin().rotate()
        #expect(rotation.to != rotation.from, "\(rotation)")
        let report = try admin().rewrap(batch: 25) { _, _, _ in }
        #expect(report.resealed[rotation.from, default: 0] >= values.count)
        // Keep the load on until every rewrapped record was asked for on both nodes again.
        let after = requests.load(ordering: .relaxed)
        while requests.load(ordering: .relaxed) < after + 2 * stored.count { usleep(10_000) }
        stop.store(true, ordering: .relaxed)
        while load.isExecuting { usleep(10_000) }

        let failed = failures.withLock { $0 }
        let total = requests.load(ordering: .relaxed)
        #expect(failed.count == 0, "\(failed.count) of \(total) requests failed: \(failed.prefix(5))")
        for (value, alias) in stored {
            #expect(MultiNodeTests.reveal(alias, on: a) == value && MultiNodeTests.reveal(alias, on: b) == value)
        }
        #expect(!a.log.contains("is not in the key ring") && !b.log.contains("is not in the key ring"))
    }
}
