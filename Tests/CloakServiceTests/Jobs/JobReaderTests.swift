import CloakCore
import CloakCrypto
import CloakTesting
import Foundation
import Testing

@testable import CloakService

/// Issue 76, item 2: `jobs:read`, the console's Jobs page's scope. It reads every job and an
/// import's refusals by reason; a job's files and its changes stay with the token that started
/// it, whatever else the reader holds.
@Suite(.serialized, .tags(.processes, .sockets))
struct JobReaderTests {
    static func token(_ secret: String) -> String {
        Digest.sha256(Array(secret.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    @Test func aReaderSeesEveryJobAndItsRefusalsButNeverItsFiles() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        // A reader that may import too (its own jobs' files are its own), an importer that is
        // not the job's owner, and a console token without a job scope.
        let tokens = [
            ("reader", "reader-token", "jobs:read, jobs:import, aliases:create"),
            ("other", "other-token", "jobs:import, aliases:create"), ("auditor", "auditor-token", "audit:read"),
        ]
        let extra = tokens.map { "{id: \($0.0), sha256: \"\(Self.token($0.1))\", scopes: [\($0.2)]}" }
        let node = try CloakNode(
            store: "sqlite:\(directory.path)/cloak.db", directory: directory.path, scopes: ImportJobTests.scopes,
            configure: {
                $0.replacingOccurrences(
                    of: "scopes: [\(ImportJobTests.scopes)]}]",
                    with: "scopes: [\(ImportJobTests.scopes)]}, " + extra.joined(separator: ", ") + "]")
            })
        defer { node.stop() }
        // Three rows the form refuses for two reasons, and two it takes.
        let cards = ImportJobTests.cards(2, seed: 76)
        let csv =
            "id,card_number,exp_date\nr0,\(cards[0]),12/29\nr1,\(cards[1]),12/29\nbad-1,1234,12/29\n"
            + "bad-2,4111,12/29\nbad-3,\(cards[0]),13/99\n"
        let started = try node.client().request(
            "POST", "/admin/jobs/imports?form=card_import&file=cards.csv", body: Array(csv.utf8),
            headers: ImportJobTests.auth)
        #expect(started.status == 202, "\(started.text)")
        let id = try #require(started.json?["id"] as? String)
        try ImportJobTests().poll {
            try node.client().request("GET", "/admin/jobs/\(id)", headers: ImportJobTests.auth).json?["state"]
                as? String == "done"
        }
        let owner = ImportJobTests.auth
        let reader = [("Authorization", "Bearer reader-token")]
        let other = [("Authorization", "Bearer other-token")]
        let auditor = [("Authorization", "Bearer auditor-token")]

        // The reader: the job in the list and by id, and its refusals by reason.
        let listed = try node.client().request("GET", "/admin/jobs", headers: reader)
        let ids = (listed.json?["data"] as? [[String: Any]])?.compactMap { $0["id"] as? String }
        #expect(ids == [id], "\(listed.text)")
        #expect(try node.client().request("GET", "/admin/jobs/\(id)", headers: reader).json?["refused"] as? Int == 3)
        for headers in [reader, owner] {
            let refusals = try node.client().request("GET", "/admin/jobs/\(id)/refusals", headers: headers)
            #expect(refusals.status == 200 && refusals.header("Cache-Control") == "no-store", "\(refusals.text)")
            let reasons = try #require(refusals.json?["data"] as? [[String: Any]])
            #expect(reasons.compactMap { $0["rows"] as? Int }.reduce(0, +) == 3, "\(refusals.text)")
            #expect(reasons.count >= 2 && refusals.json?["other_rows"] as? Int == 0)
            // Reasons name fields and rules: never a row's id or a value.
            for secret in ["bad-1", "bad-2", "bad-3", "1234", "13/99", cards[0], cards[1]] {
                #expect(!refusals.text.contains(secret), "\(secret) in \(refusals.text)")
            }
        }
        // Its files and changes are the owner's alone: 404 to the reader, as for no job.
        for path in ["/admin/jobs/\(id)/mapping", "/admin/jobs/\(id)/advice"] {
            #expect(try node.client().request("GET", path, headers: reader).status == 404, "\(path)")
            #expect(try node.client().request("GET", path, headers: owner).status == 200, "\(path)")
        }
        #expect(try node.client().request("POST", "/admin/jobs/\(id)/cancel", headers: reader).status == 404)
        // Another importer sees neither the job nor its refusals; a token without a job scope is
        // refused; no token at all is asked for one.
        #expect(try node.client().request("GET", "/admin/jobs/\(id)/refusals", headers: other).status == 404)
        #expect(try node.client().request("GET", "/admin/jobs/\(id)/refusals", headers: auditor).status == 403)
        #expect(try node.client().request("GET", "/admin/jobs/\(id)/refusals", headers: []).status == 401)
        for malformed in ["nope", "job_", String(repeating: "j", count: 5_000), "%00", "..%2F..%2Fetc"] {
            let answer = try node.client().request("GET", "/admin/jobs/\(malformed)/refusals", headers: reader)
            #expect(answer.status == 404 || answer.status == 400, "\(malformed.prefix(20)): \(answer.status)")
        }
    }
}
