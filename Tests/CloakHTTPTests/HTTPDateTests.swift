import CloakTesting
import Foundation
import Testing

@testable import CloakHTTP

/// The loop's own `Date` header text, against Foundation's formatter and on the wire.
@Suite(.tags(.sockets)) struct HTTPDateTests {
    static let reference: DateFormatter = {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "GMT")
        f.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return f
    }()

    static func text(_ seconds: Int) -> String { String(decoding: HTTPDate.format(seconds), as: UTF8.self) }

    @Test func rfcExampleAndEdges() {
        #expect(Self.text(784_111_777) == "Sun, 06 Nov 1994 08:49:37 GMT")  // RFC 9110's example
        #expect(Self.text(0) == "Thu, 01 Jan 1970 00:00:00 GMT")
        #expect(Self.text(951_782_400) == "Tue, 29 Feb 2000 00:00:00 GMT")
        #expect(Self.text(4_107_542_399) == "Sun, 28 Feb 2100 23:59:59 GMT")
        #expect(Self.text(4_107_542_400) == "Mon, 01 Mar 2100 00:00:00 GMT")  // 2100 is not a leap year
        #expect(Self.text(253_402_300_799) == "Fri, 31 Dec 9999 23:59:59 GMT")
        // Outside the four-digit years the text is clamped, never malformed.
        #expect(Self.text(-1) == Self.text(0))
        #expect(Self.text(.max) == Self.text(253_402_300_799))
    }

    @Test func everyDayAndRandomSecondsMatchFoundation() {
        // Each day from 1970 to 2200 at a random second, and random seconds up to year 9999.
        var generator = SystemRandomNumberGenerator()
        for day in 0..<(230 * 366) {
            let second = day * 86_400 + Int.random(in: 0..<86_400, using: &generator)
            #expect(Self.text(second) == Self.reference.string(from: Date(timeIntervalSince1970: Double(second))))
        }
        for _ in 0..<5_000 {
            let second = Int.random(in: 0...253_402_300_799, using: &generator)
            #expect(Self.text(second) == Self.reference.string(from: Date(timeIntervalSince1970: Double(second))))
        }
    }

    @Test func cachedTextChangesOnlyWithTheSecond() {
        var date = HTTPDate()
        date.update(to: 784_111_777)
        let first = date.text
        #expect(first.count == 29)
        date.update(to: 784_111_777)
        #expect(date.text == first)
        date.update(to: 784_111_778)
        #expect(
            String(decoding: date.text, as: UTF8.self)
                == "Sun, 06 Nov 1994 08:49:38 GMT")
    }

    @Test func answersCarryOneDateAndKeepTheHandlersOwn() throws {
        let server = try HTTPServerTests.start(.init(port: 0, threads: 1)) { request in
            request.path == "/own"
                ? HTTPResponse(status: 200, headers: [("date", "Sun, 06 Nov 1994 08:49:37 GMT")], body: Array("x".utf8))
                : .json(200, Array("{}".utf8))
        }
        defer { server.shutdown() }
        let client = try RawHTTPClient(port: server.port)
        for _ in 0..<3 {
            let r = try client.request("GET", "/")
            let dates = r.headers.filter { $0.name.lowercased() == "date" }
            #expect(dates.count == 1)
            let sent = try #require(Self.reference.date(from: dates[0].value))
            #expect(abs(sent.timeIntervalSinceNow) < 600)  // the wall clock's day, not a timing
        }
        let own = try client.request("GET", "/own")
        #expect(own.headers.filter { $0.name.lowercased() == "date" }.map(\.value) == ["Sun, 06 Nov 1994 08:49:37 GMT"])
    }
}
