import Testing

@testable import CloakHTTP

/// The per-connection deadlines as a state machine, without sockets.
private let second: UInt64 = 1_000_000_000

extension RequestClock {
    /// The clock reads bytes in place; tests hand it arrays.
    @discardableResult
    mutating func received(_ bytes: [UInt8], now: UInt64) -> Bool {
        bytes.withUnsafeBytes { received($0, now: now) }
    }
}

private func feed(_ clock: inout RequestClock, _ text: String, _ now: UInt64) -> Bool {
    clock.received(Array(text.utf8), now: now)
}

@Suite struct RequestClockTests {
    static func expired(_ clock: RequestClock, at now: UInt64) -> Bool {
        clock.isExpired(now: now, headerTimeout: 10 * second, bodyTimeout: 30 * second)
    }

    @Test func drippedBytesDoNotMoveTheHeadDeadline() {
        var clock = RequestClock(now: 0)
        for (i, byte) in Array("GET / HTTP/1.1\r\nX-Slow: a".utf8).enumerated() {
            clock.received([byte], now: UInt64(i) * second / 2)
        }
        #expect(clock.phase == .awaitingHead)
        #expect(!Self.expired(clock, at: 10 * second))
        #expect(Self.expired(clock, at: 10 * second + 1))
    }

    @Test(arguments: ["GET / HTTP/1.1\r\nHost: x\r\n\r\n", "GET / HTTP/1.1\nHost: x\n\n", "\r\nGET / HTTP/1.0\r\n\r\n"])
    func anEmptyLineAfterContentEndsTheHead(head: String) {
        var clock = RequestClock(now: 0)
        #expect(feed(&clock, head, 5 * second))
        #expect(clock.phase == .readingBody)
        #expect(!Self.expired(clock, at: 35 * second))
        #expect(Self.expired(clock, at: 35 * second + 1))
    }

    @Test func aHeadSplitAcrossReadsIsFound() {
        var clock = RequestClock(now: 0)
        #expect(!feed(&clock, "POST / HTTP/1.1\r\nContent-Length: 3\r", 1))
        #expect(!feed(&clock, "\n\r", 2))
        #expect(feed(&clock, "\nabc", 3))
    }

    @Test func leadingEmptyLinesDoNotEndAHead() {
        var clock = RequestClock(now: 0)
        #expect(!feed(&clock, "\r\n\r\n\n", 1))
        #expect(clock.phase == .awaitingHead)
    }

    @Test func handlingHasNoDeadlineAndAnAnswerRestartsTheHeadClock() {
        var clock = RequestClock(now: 0)
        clock.received(Array("GET / HTTP/1.1\r\n\r\n".utf8), now: 1)
        clock.dispatched(now: 2)
        #expect(!Self.expired(clock, at: 1_000 * second))
        clock.answered(now: 1_000 * second)
        #expect(clock.phase == .awaitingHead)
        #expect(!Self.expired(clock, at: 1_010 * second))
        #expect(Self.expired(clock, at: 1_011 * second))
        // Body bytes are never scanned: an empty line inside a body is not a head.
        clock.received(Array("PUT / HTTP/1.1\r\nContent-Length: 8\r\n\r\n".utf8), now: 1_001 * second)
        #expect(!feed(&clock, "\r\n\r\n\r\n\r\n", 1_002 * second))
        #expect(clock.phase == .readingBody)
    }

    /// The line-by-line scan agrees with the definition read byte by byte (an LF ends the head
    /// when content was seen and the line it ends has no byte but CR), however the bytes are
    /// cut into reads.
    @Test func theLineScanIsTheByteDefinition() {
        var generator = SystemRandomNumberGenerator()
        let alphabet: [UInt8] = [0x0D, 0x0A, 0x0A, UInt8(ascii: "x"), 0x20]
        for _ in 0..<5_000 {
            let bytes = (0..<Int.random(in: 0..<24, using: &generator)).map { _ in
                alphabet.randomElement(using: &generator)!
            }
            // The definition: the index of the LF that ends the head, if any.
            var expectedEnd: Int?
            var sawContent = false, lineHasContent = false
            for (i, b) in bytes.enumerated() {
                if b == 0x0A {
                    if sawContent && !lineHasContent { expectedEnd = i; break }
                    lineHasContent = false
                } else if b != 0x0D {
                    lineHasContent = true
                    sawContent = true
                }
            }
            var clock = RequestClock(now: 0)
            var cut = 0
            var endedIn: Range<Int>?
            while cut < bytes.count, endedIn == nil {
                let next = min(bytes.count, cut + Int.random(in: 1...5, using: &generator))
                if bytes[cut..<next].withUnsafeBytes({ clock.received($0, now: 1) }) { endedIn = cut..<next }
                cut = next
            }
            if let expectedEnd {
                // The read that held the head's last LF is the one that ended it.
                #expect(endedIn?.contains(expectedEnd) == true, "\(bytes)")
                #expect(clock.phase == .readingBody)
            } else {
                #expect(endedIn == nil, "\(bytes)")
                #expect(clock.phase == .awaitingHead)
            }
        }
    }

    /// Defect 11: with TLS configured, a connection whose TLS session could not be made is
    /// closed, never served in cleartext.
    @Test func tlsFailsClosed() {
        #expect(Admission.decide(tlsConfigured: true, tlsSessionMade: false, slotTaken: true) == .closeWithoutTLS)
        #expect(Admission.decide(tlsConfigured: true, tlsSessionMade: false, slotTaken: false) == .closeWithoutTLS)
        #expect(Admission.decide(tlsConfigured: true, tlsSessionMade: true, slotTaken: true) == .serve)
        #expect(Admission.decide(tlsConfigured: false, tlsSessionMade: false, slotTaken: true) == .serve)
        #expect(Admission.decide(tlsConfigured: false, tlsSessionMade: false, slotTaken: false) == .refuseOverLimit)
    }
}
