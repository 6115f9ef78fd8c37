import CloakCore
import CloakCrypto
import CloakVault

/// An import's refused rows counted by reason from its advice file's lines (issue 76: the
/// console's Jobs page, `cloak import`'s commonest reason). Pure: fed the opened chunks in order.
/// Bounded whatever the file holds: a line is looked at only when it says `refused`, and at
/// most ``maxReasons`` reasons (each at most ``maxReasonBytes``) are told apart.
package struct RefusalCount: Sendable {
    /// One reason: its code, its reason (the fields and the rules they broke, never a value or
    /// a row id) and how many rows it refused.
    package struct Refusal: Sendable, Equatable {
        package var code: Int
        package var reason: String
        package var rows: Int

        package init(code: Int, reason: String, rows: Int) {
            self.code = code
            self.reason = reason
            self.rows = rows
        }
    }

    static let maxReasons = 1_000
    static let maxReasonBytes = 300

    private var counts: [String: Refusal] = [:]
    private var other = 0
    /// The bytes of a line a chunk ended inside.
    private var carry: [UInt8] = []
    /// The advice's last chunk was read: the count is whole.
    package var ended = false

    package init() {}

    /// The next chunk's bytes.
    package mutating func add(_ bytes: [UInt8]) {
        var start = 0
        var index = 0
        while index < bytes.count {
            if bytes[index] == 0x0A {
                if carry.isEmpty {
                    line(bytes[start..<index])
                } else {
                    carry += bytes[start..<index]
                    line(carry[...])
                    carry.removeAll(keepingCapacity: true)
                }
                start = index + 1
            }
            index += 1
        }
        if start < bytes.count { carry += bytes[start...] }
    }

    /// `job`'s advice counted as far as it goes: `chunks(from)` gives the sealed chunks from that
    /// place on (none: no more), each opened in its place. A done job's advice is whole: one cut
    /// short in the store is an error, not a smaller count.
    package static func read(_ job: StoredJob, seal: JobSeal, chunks: (Int) throws -> [[UInt8]]) throws
        -> RefusalCount
    {
        var count = RefusalCount()
        var index = 0
        while !count.ended {
            let read = try chunks(index)
            if read.isEmpty { break }
            for sealed in read where !count.ended {
                let opened = try seal.open(sealed, part: JobPart.advice.rawValue, index: index)
                index += 1
                count.add(opened.bytes)
                count.ended = opened.isLast
            }
        }
        if job.state == .done && !count.ended { throw CutShort() }
        return count
    }

    /// A done job's advice without its last chunk.
    package struct CutShort: Error, CustomStringConvertible {
        package var description: String { "the job's advice is cut short in the store" }
    }

    /// The `limit` commonest reasons, most rows first, and the rows refused for any other.
    package func result(limit: Int) -> (reasons: [Refusal], otherRows: Int) {
        var all = counts
        var other = self.other
        if !carry.isEmpty {
            var copy = self
            copy.line(carry[...])
            (all, other) = (copy.counts, copy.other)
        }
        let sorted = all.values.sorted { $0.rows > $1.rows || ($0.rows == $1.rows && $0.reason < $1.reason) }
        return (Array(sorted.prefix(limit)), other + sorted.dropFirst(limit).reduce(0) { $0 + $1.rows })
    }

    private static let refusedMark = Array(#""refused""#.utf8)

    private mutating func line(_ line: ArraySlice<UInt8>) {
        // Most lines are `ok`: parsed only when they say `refused` somewhere.
        guard line.count > Self.refusedMark.count, Self.contains(line, Self.refusedMark),
            let advice = try? JSONParser().parse(Array(line)), advice["result"]?.stringValue == "refused",
            var reason = advice["reason"]?.stringValue
        else { return }
        if reason.utf8.count > Self.maxReasonBytes {
            reason = String(decoding: reason.utf8.prefix(Self.maxReasonBytes), as: UTF8.self) + "…"
        }
        var code = 0
        if case let .number(text)? = advice["code"] { code = Int(text) ?? 0 }
        let key = "\(code) \(reason)"
        if counts[key] == nil, counts.count >= Self.maxReasons {
            other += 1
        } else {
            counts[key, default: Refusal(code: code, reason: reason, rows: 0)].rows += 1
        }
    }

    private static func contains(_ haystack: ArraySlice<UInt8>, _ needle: [UInt8]) -> Bool {
        guard haystack.count >= needle.count else { return false }
        var i = haystack.startIndex
        let last = haystack.endIndex - needle.count
        while i <= last {
            if haystack[i] == needle[0], haystack[i..<(i + needle.count)].elementsEqual(needle) { return true }
            i += 1
        }
        return false
    }
}
