import CloakCore
import Testing

@testable import CloakJobs

/// Refusals counted from an advice file's lines however its chunks cut them (issue 76).
struct RefusalCountTests {
    static func refused(_ row: Int, _ reason: String, code: Int = 1002) -> String {
        #"{"row":\#(row),"id":"r\#(row)","result":"refused","code":\#(code),"reason":"\#(reason)"}"# + "\n"
    }
    static func ok(_ row: Int, id: String? = nil) -> String {
        #"{"row":\#(row),"id":"\#(id ?? "r\(row)")","result":"ok"}"# + "\n"
    }

    /// The same file, cut into chunks at every size from 1 byte to the whole: the same count.
    @Test(arguments: [1, 2, 7, 64, 10_000])
    func chunksCutAnywhereCountTheSame(size: Int) {
        let file =
            Self.ok(1) + Self.refused(2, "field card_number: not valid") + Self.ok(3, id: "\"refused\"")
            + Self.refused(4, "the row has no value to alias") + Self.refused(5, "field card_number: not valid")
            + Self.refused(6, "too many", code: 1429).dropLast()  // the last line without its newline
        let bytes = Array(file.utf8)
        var count = RefusalCount()
        var start = 0
        while start < bytes.count {
            count.add(Array(bytes[start..<min(start + size, bytes.count)]))
            start += size
        }
        let (reasons, other) = count.result(limit: 2)
        #expect(
            reasons == [
                RefusalCount.Refusal(code: 1002, reason: "field card_number: not valid", rows: 2),
                // A tie goes by reason: "too many" is the one left out, its row counted as another's.
                RefusalCount.Refusal(code: 1002, reason: "the row has no value to alias", rows: 1),
            ])
        #expect(other == 1)
        #expect(count.result(limit: 5).reasons.last == RefusalCount.Refusal(code: 1429, reason: "too many", rows: 1))
    }

    /// Hostile reasons: past 1,000 distinct ones the rest are counted together, and a long
    /// reason is cut; lines that are not JSON are skipped.
    @Test func reasonsAreBoundedWhateverTheFileHolds() {
        var count = RefusalCount()
        for row in 0..<1_500 { count.add(Array(Self.refused(row, "reason \(row)").utf8)) }
        count.add(Array(Self.refused(2_000, String(repeating: "x", count: 5_000)).utf8))
        count.add(Array("not json \"refused\"\n{\"result\":\"refused\"\n".utf8))
        let (reasons, other) = count.result(limit: 1_000)
        #expect(reasons.count == 1_000 && other == 501)
        var long = RefusalCount()
        long.add(Array(Self.refused(1, String(repeating: "y", count: 5_000)).utf8))
        #expect(long.result(limit: 1).reasons.first?.reason.utf8.count ?? 0 <= RefusalCount.maxReasonBytes + 3)
    }
}

/// What a `jobs:read` token that neither owns nor approves a job is told of its caller text.
struct JobReaderTextTests {
    @Test(arguments: [
        (#"unknown column "Ada Lovelace""#, #"unknown column "…""#),
        (#"field "exp" and "cvv""#, #"field "…" and "…""#),
        (#"cut "4111 1111 1111 1111"#, #"cut "…""#),
        ("no quote, card 4111 1111 1111 1111 here", "no quote, card [redacted] here"),
        ("", ""),
    ])
    func quotedTextIsLeftOut(text: String, told: String) {
        #expect(JobReport.forReaders(text) == told)
    }

    @Test func reasonsThatBecomeTheSameAreCountedTogether() {
        let reasons = [
            RefusalCount.Refusal(code: 1002, reason: #"unknown key "a""#, rows: 2),
            RefusalCount.Refusal(code: 1002, reason: #"unknown key "b""#, rows: 3),
            RefusalCount.Refusal(code: 1002, reason: "the row has no value to alias", rows: 4),
        ]
        #expect(
            JobReport.forReaders(reasons) == [
                RefusalCount.Refusal(code: 1002, reason: #"unknown key "…""#, rows: 5),
                RefusalCount.Refusal(code: 1002, reason: "the row has no value to alias", rows: 4),
            ])
    }
}
