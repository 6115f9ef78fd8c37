import CloakCore
import Foundation
import Synchronization
import Testing

@testable import CloakService

/// The access log's line, fixed parts written as they are, is the JSON the fields say.
@Suite struct AccessLogTests {
    /// Records one line and parses it.
    func line(
        method: String = "GET", path: String, route: String = "/x", status: Int = 200, micros: Int = 12,
        requestID: String = "abc"
    ) throws -> [String: Any] {
        let lines = Mutex<[String]>([])
        AccessLog { line in lines.withLock { $0.append(String(decoding: line, as: UTF8.self)) } }
            .record(method: method, path: path, route: route, status: status, micros: micros, requestID: requestID)
        let text = try #require(lines.withLock { $0.first })
        return try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    @Test func aLineHoldsTheRequestFacts() throws {
        let object = try line(
            method: "POST", path: "/forms/checkout/validate", route: "/forms/{form}/validate",
            status: 422, micros: 1234, requestID: "r-1")
        #expect(object["level"] as? String == "info")
        #expect(object["msg"] as? String == "request")
        #expect(object["method"] as? String == "POST")
        #expect(object["path"] as? String == "/forms/checkout/validate")
        #expect(object["route"] as? String == "/forms/{form}/validate")
        #expect(object["status"] as? Int == 422)
        #expect(object["duration_us"] as? Int == 1234)
        #expect(object["request_id"] as? String == "r-1")
        let ts = try #require(object["ts"] as? String)
        #expect(ts.utf8.count == 24 && ts.hasSuffix("Z"), "\(ts)")
    }

    @Test func quotesBackslashesAndControlBytesAreEscaped() throws {
        let path = "/a\"b\\c\u{01}\n\t/é"
        #expect(try line(path: path)["path"] as? String == path)
    }

    @Test func aPathHoldingANumberIsScrubbed() throws {
        let path = try #require(try line(path: "/aliases/4111111111111111")["path"] as? String)
        #expect(!path.contains("4111111111111111") && path.contains("[redacted]"), "\(path)")
    }

    @Test func aLongEscapedLineIsStillWhole() throws {
        // 250 control bytes escape to 1,500 bytes: far past the writer's first capacity.
        let path = "/" + String(repeating: "\u{01}", count: 250)
        let object = try line(path: path, requestID: "long")
        #expect(object["path"] as? String == path)
        #expect(object["request_id"] as? String == "long")
    }

    @Test func negativeDurationsAreWrittenAsZero() throws {
        #expect(try line(path: "/", micros: -5)["duration_us"] as? Int == 0)
    }
}

/// Timestamps come from day arithmetic instead of gmtime_r: the two agree.
@Suite struct UTCTimestampTests {
    @Test func theCivilDateMatchesGmtime() {
        // Every day from 1900 to 2200, at a second that moves through the day.
        for days in stride(from: -25_567, through: 84_000, by: 1) {
            let seconds = days * 86_400 + ((days * 7_919) % 86_400 + 86_400) % 86_400
            var t = time_t(seconds)
            var parts = tm()
            gmtime_r(&t, &parts)
            let (year, month, day) = CalendarDate.civil(daysSince1970: days)
            guard year == Int(parts.tm_year) + 1900, month == Int(parts.tm_mon) + 1, day == Int(parts.tm_mday) else {
                Issue.record("day \(days): \(year)-\(month)-\(day)")
                return
            }
        }
    }

    @Test func theTextIsISO8601WithMilliseconds() {
        #expect(UTCTimestamp.string(seconds: 0, milliseconds: 0) == "1970-01-01T00:00:00.000Z")
        #expect(UTCTimestamp.string(seconds: 1_795_395_723, milliseconds: 45) == "2026-11-23T01:02:03.045Z")
        #expect(UTCTimestamp.string(seconds: 951_868_799, milliseconds: 999) == "2000-02-29T23:59:59.999Z")
        #expect(UTCTimestamp.string(seconds: -1, milliseconds: 0) == "1969-12-31T23:59:59.000Z")
    }
}
