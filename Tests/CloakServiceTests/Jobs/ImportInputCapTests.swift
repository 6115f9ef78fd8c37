import CloakCore
import CloakCrypto
import CloakTesting
import Foundation
import Testing

@testable import CloakService

/// Review V, item 9: `jobs.max_input_mib` bounded each file, not a token's files in all, so a
/// token's eight open imports could hold eight times it on the store's disk. What a token's
/// imports hold is summed in the transaction that stores each chunk: over the API and through
/// `cloak import` alike, a file that would pass the limit in all is refused, and taken once the
/// other import's input has gone.
@Suite(.serialized, .tags(.racy, .processes, .sockets))
struct ImportInputCapTests {
    @Test func aTokensImportsHoldAtMostMaxInputInAll() throws {
        let directory = TemporaryDirectory()
        let node = try CloakNode(
            store: "sqlite:\(directory.path)/cloak.db", directory: directory.path, scopes: ImportJobTests.scopes,
            configure: { $0.replacingOccurrences(of: "  max_input_mib: 4096", with: "  max_input_mib: 1") })
        defer { node.stop() }
        let cards = ImportJobTests.cards(1, seed: 75)
        // 700 KiB and 400 KiB of rows: each within the 1 MiB limit, not both.
        func rows(_ bytes: Int) -> [UInt8] {
            let header = "id,card_number,exp_date\n"
            let line = "r1,\(cards[0]),12/29\n"
            return Array((header + String(repeating: line, count: (bytes - header.utf8.count) / line.utf8.count)).utf8)
        }
        let big = rows(700 << 10), small = rows(400 << 10)
        let smallPath = ImportJobTests.write(String(decoding: small, as: UTF8.self), directory, "small.csv")
        func heldChunks() throws -> Int {
            Int(
                try ImportJobTests().sqlite([
                    "\(directory.path)/cloak.db", "SELECT count(*) FROM job_chunks WHERE part = 0",
                ])
                .trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
        }
        do {
            // The big file arrives, all but its last bytes: its job holds its chunks, receiving.
            let stalled = try node.client()
            try stalled.send(
                "POST /admin/jobs/imports?form=card_import HTTP/1.1\r\nHost: x\r\n"
                    + "Authorization: Bearer \(CloakNode.token)\r\nContent-Length: \(big.count)\r\n\r\n")
            try stalled.send(Array(big.prefix(big.count - 100)))
            try ImportJobTests().poll { try heldChunks() >= (big.count - 100) / FileSeal.chunkSize - 1 }
            let refused = try node.client().request(
                "POST", "/admin/jobs/imports?form=card_import", body: small, headers: ImportJobTests.auth)
            #expect(
                refused.status == 413 && refused.text.contains("jobs.max_input_mib (1 MiB) of input in all"),
                "\(refused.status) \(refused.text)")
            #expect(!refused.text.contains(cards[0]))
            let cli = try node.command(["import", "--form", "card_import", "--token", "nodes", smallPath])
            #expect(cli.status != 0 && cli.output.contains("of input in all"), "\(cli.status) \(cli.output)")
            // Only the stalled job's chunks are held: the refused files' went with them.
            try ImportJobTests().poll {
                try ImportJobTests().sqlite([
                    "\(directory.path)/cloak.db", "SELECT count(*) FROM jobs WHERE state = 'receiving'",
                ]).hasPrefix("1")
            }
        }
        // Broken off, the stalled job fails and holds nothing: the small file is taken.
        try ImportJobTests().poll {
            !(try node.command(["jobs", "list"]).output.contains(#""state":"receiving""#))
        }
        let taken = try node.client().request(
            "POST", "/admin/jobs/imports?form=card_import", body: small, headers: ImportJobTests.auth)
        #expect(taken.status == 202, "\(taken.status) \(taken.text)")
    }
}
