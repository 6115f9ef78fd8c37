import CloakCore
import CloakCrypto
import CloakTesting
import CloakVault
import Foundation
import Testing

@testable import CloakJobs
@testable import CloakService

/// Issue 60: how an import's rows are read and checked, without a node: the column rules, the
/// rows of CSV and JSON Lines, each row's refusal (its rule, never its value), and the input
/// sealed in chunks as it arrives.
struct ImportPlanTests {
    static let configuration = try! ServiceConfiguration.parse(yaml: TestServer.shippedConfiguration)
    static let today = CalendarDate(year: 2026, month: 11, day: 27)!

    static func plan(_ source: ImportSpec.Source, layout: ImportSpec.Layout = .csv, map: String? = nil)
        throws(CloakError) -> ImportPlan
    {
        try ImportPlan(ImportSpec(source: source, layout: layout, map: map), forms: configuration.forms)
    }

    /// Every item of `text` read at once and a byte at a time: the same items either way.
    static func items(_ plan: ImportPlan, _ text: String) throws -> [ImportReader.Item] {
        var whole = ImportReader(plan: plan)
        let all = try whole.feed(Array(text.utf8)) + whole.finish()
        var bytewise = ImportReader(plan: plan)
        var each: [ImportReader.Item] = []
        for byte in text.utf8 { each += try bytewise.feed([byte]) }
        each += try bytewise.finish()
        #expect(all.map(\.line) == each.map(\.line))
        #expect(all.map(\.id) == each.map(\.id))
        return all
    }

    @Test(arguments: [
        (ImportSpec.Source.form("checkout"), "VOLATILE"),
        (.form("kyc"), "takes files"),
        (.form("nosuch"), "no form nosuch"),
    ])
    func aFormThatCannotBeImportedIsRefusedBeforeAnyFile(source: ImportSpec.Source, problem: String) {
        #expect(throws: CloakError.self) { try Self.plan(source) }
        do throws(CloakError) { _ = try Self.plan(source) } catch {
            #expect(error.message.contains(problem), "\(error.message)")
        }
    }

    @Test(arguments: [
        ("id,card_number,exp_date,cvc", "security code"),
        ("id,card_number,exp_date,CVV", "security code"),
        ("id,card_number", "no column exp_date"),
        ("card_number,exp_date", "no column id"),
        ("id,card_number,exp_date,notes", "unknown column \"notes\""),
        ("id,id,card_number,exp_date", "two columns are id"),
        // A file without its header line: its first row's values are never echoed.
        ("4111111111111111,c1,12/29", "unknown column \"[redacted]\""),
    ])
    func aHeaderThatCannotBeImportedIsFatal(header: String, problem: String) throws {
        let plan = try Self.plan(.form("card_import"))
        var reader = ImportReader(plan: plan)
        do {
            _ = try reader.feed(Array("\(header)\nx,4111111111111111,12/29\n".utf8))
            Issue.record("\(header) was taken")
        } catch {
            #expect(error.description.contains(problem), "\(error.description)")
            #expect(!error.description.contains("4111111111111111"))
        }
    }

    @Test func rowsAreReadWithTheirLinesAndIDsWhateverTheirShape() throws {
        let plan = try Self.plan(.form("card_import"), map: "pan=card_number,customer=id")
        let text =
            "\u{FEFF}customer,pan,exp_date\r\n\"c,1\",4111111111111111,12/29\r\n\r\nc2,4111111111111111\r\n"
            + "c3,\"41\"11,12/29\r\nc4,\"5555555555554444\",\"01/30\""
        let items = try Self.items(plan, text)
        #expect(items.map(\.line) == [2, 4, 5, 6])
        #expect(items.map(\.id) == [nil, "c2", nil, nil])
        let values = items.map { try? $0.values.get() }
        #expect(values[0]?["id"] == "c,1" && values[0]?["card_number"] == "4111111111111111")
        #expect(values[3]?["exp_date"] == "01/30")
        // Too few fields, a quote inside a field: refused, and the rows after are read.
        #expect(values[1] == nil && values[2] == nil)
    }

    @Test func aRowsRefusalNamesItsRuleAndNeverItsValue() throws {
        let plan = try Self.plan(.form("card_import"))
        let rows: [[String: String]] = [
            ["id": "a", "card_number": "4111111111111112", "exp_date": "12/29"],
            ["id": "b", "card_number": "4111111111111111", "exp_date": "13/29"],
            ["id": "c", "card_number": "", "exp_date": "12/29"],
            ["id": "", "card_number": "4111111111111111", "exp_date": "12/29"],
            ["id": String(repeating: "x", count: 129), "card_number": "4111111111111111", "exp_date": "12/29"],
            ["id": "4111 1111 1111 1111", "card_number": "4111111111111111", "exp_date": "12/29"],
        ]
        let refusals = rows.enumerated().map { index, values -> ImportRefusal? in
            let row = plan.row(values, line: index + 2, today: Self.today)
            if case let .failure(refusal) = row.outcome { return refusal }
            return nil
        }
        #expect(refusals.map { $0?.code } == [1001, 1001, 1001, 1002, 1002, 1002])
        #expect(refusals[0]?.reason.contains("card_number") == true)
        #expect(refusals[1]?.reason.contains("exp_date") == true)
        #expect(refusals[2]?.reason.contains("card_number: missing") == true)
        for refusal in refusals {
            #expect(refusal.map { !$0.reason.contains("411111111111111") && !$0.reason.contains("xxxx") } == true)
        }
        let good = plan.row(
            ["id": "d", "card_number": "4111111111111111", "exp_date": "12/29"], line: 9, today: Self.today)
        guard case let .success(values) = good.outcome else {
            Issue.record("a good row was refused")
            return
        }
        // The aliased card in the mapping; the row's id and its expiry (as the form reads it)
        // stored only as values of the row's group.
        #expect(values.map(\.key) == ["id", "card_number", "exp_date"])
        #expect(values.map(\.inMapping) == [false, true, false])
        #expect(values[1].request.storage == .persistent && values[1].request.format == .FPE_T_FOUR)
        #expect(values[0].request.value == "d" && values[2].request.value == "12/29", "\(values[2].request.value)")
        #expect(values.allSatisfy { $0.request.storage == .persistent })
    }

    @Test func jsonLinesPassTheSameColumnRulesLineByLine() throws {
        let plan = try Self.plan(.format(.UUID), layout: .jsonl)
        let text = [
            #"{"id":"a","value":"123-45-6789"}"#, #"{"id":"b","value":123}"#, #"{"id":"c","value":"x","cvc":"1"}"#,
            #"{"id":"d"}"#, "[]", #"{"id":"e","value":"v"}"#,
        ].joined(separator: "\n")
        let items = try Self.items(plan, text)
        #expect(items.map(\.line) == [1, 2, 3, 4, 5, 6])
        #expect(items.map { (try? $0.values.get()) != nil } == [true, false, false, false, false, true])
        #expect(items.map(\.id) == [nil, nil, "c", "d", nil, nil])
    }

    @Test func theInputIsSealedInChunksAndOpensOnlyInItsPlace() throws {
        let ring = KeyRing.generate()
        let id = JobID.make(now: 1_800_000_000)
        let binding = StoredJob.sealBinding(kind: .import, owner: "importer", spec: [1, 2, 3])
        let seal = try JobSeal(newJob: id.text, binding: binding, ring: ring)
        var input = JobInput(id: id, seal: seal, plan: try Self.plan(.form("card_import")))
        let row = "r,4111111111111111,12/29\n"
        let text = "id,card_number,exp_date\n" + String(repeating: row, count: 6_000)
        var chunks: [(index: Int, sealed: [UInt8])] = []
        let bytes = Array(text.utf8)
        var at = 0
        while at < bytes.count {
            let piece = Array(bytes[at..<min(at + 10_000, bytes.count)])
            chunks += try input.feed(piece)
            at += piece.count
        }
        chunks.append(try input.finish())
        #expect(input.rows == 6_000)
        #expect(chunks.map(\.index) == Array(0..<chunks.count))
        #expect(chunks.count == (bytes.count + FileSeal.chunkSize - 1) / FileSeal.chunkSize)
        let reopened = try JobSeal(job: id.text, binding: binding, wrappedKey: seal.wrappedKey, ring: ring)
        var plain: [UInt8] = []
        for chunk in chunks {
            let opened = try reopened.open(chunk.sealed, part: JobPart.input.rawValue, index: chunk.index)
            #expect(opened.isLast == (chunk.index == chunks.count - 1))
            plain += opened.bytes
        }
        #expect(plain == bytes)
        // Out of its place, in another stream, another job's, or altered: it does not open.
        #expect(throws: CryptoError.self) { try reopened.open(chunks[1].sealed, part: 0, index: 0) }
        #expect(throws: CryptoError.self) {
            try reopened.open(chunks[0].sealed, part: JobPart.mapping.rawValue, index: 0)
        }
        #expect(throws: CryptoError.self) {
            try JobSeal(job: "job_other", binding: binding, wrappedKey: seal.wrappedKey, ring: ring)
        }
        // A row handed to another token, or given another description, no longer opens.
        for other in [
            StoredJob.sealBinding(kind: .import, owner: "intruder", spec: [1, 2, 3]),
            StoredJob.sealBinding(kind: .import, owner: "importer", spec: [1, 2, 4]),
        ] {
            #expect(throws: CryptoError.self) {
                try JobSeal(job: id.text, binding: other, wrappedKey: seal.wrappedKey, ring: ring)
            }
        }
        var altered = chunks[0].sealed
        altered[20] ^= 1
        #expect(throws: CryptoError.self) { try reopened.open(altered, part: 0, index: 0) }
    }
}
