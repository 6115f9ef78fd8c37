import Testing

@testable import CloakService

/// When the trace export tries a batch again (OTLP/HTTP's retry rules), as a table.
struct ExportRetryTests {
    typealias Step = (outcome: ExportRetry.Outcome, decision: ExportRetry.Decision)

    static let cases: [(String, [Step])] = [
        ("accepted at once", [(.answered(status: 200, retryAfter: nil), .exported)]),
        ("any 2xx", [(.answered(status: 204, retryAfter: nil), .exported)]),
        ("bad request: no retry", [(.answered(status: 400, retryAfter: nil), .drop(status: 400))]),
        ("server error other than 502-504: no retry", [(.answered(status: 500, retryAfter: nil), .drop(status: 500))]),
        ("redirect: no retry", [(.answered(status: 301, retryAfter: nil), .drop(status: 301))]),
        ("an answer that is not usable HTTP: no retry", [(.unusable, .drop(status: nil))]),
        (
            "503 with Retry-After, then accepted",
            [
                (.answered(status: 503, retryAfter: 3), .retry(afterSeconds: 3)),
                (.answered(status: 200, retryAfter: nil), .exported),
            ]
        ),
        (
            "429's hint is capped",
            [(.answered(status: 429, retryAfter: 86_400), .retry(afterSeconds: ExportRetry.maxPauseAfterHint))]
        ),
        (
            "backoff doubles (jitter 1: the whole of it) up to its cap, then the batch is dropped",
            [
                (.failed, .retry(afterSeconds: 0.5)),
                (.answered(status: 502, retryAfter: nil), .retry(afterSeconds: 1)),
                (.answered(status: 504, retryAfter: nil), .retry(afterSeconds: 2)), (.failed, .retry(afterSeconds: 4)),
                (.failed, .drop(status: nil)),
            ]
        ),
        (
            "the fifth refusal drops with its status",
            [
                (.answered(status: 503, retryAfter: 0), .retry(afterSeconds: 0)),
                (.answered(status: 503, retryAfter: 0), .retry(afterSeconds: 0)),
                (.answered(status: 503, retryAfter: 0), .retry(afterSeconds: 0)),
                (.answered(status: 503, retryAfter: 0), .retry(afterSeconds: 0)),
                (.answered(status: 503, retryAfter: 0), .drop(status: 503)),
            ]
        ),
    ]

    @Test(arguments: cases.indices)
    func eachOutcomeDecides(index: Int) {
        let (name, steps) = Self.cases[index]
        var retry = ExportRetry()
        for (n, step) in steps.enumerated() {
            #expect(retry.decide(step.outcome, jitter: 1) == step.decision, "\(name), step \(n + 1)")
        }
    }

    @Test func jitterTakesBetweenHalfAndAllOfTheBackoff() {
        var low = ExportRetry()
        var high = ExportRetry()
        #expect(low.decide(.failed, jitter: 0) == .retry(afterSeconds: 0.25))
        #expect(high.decide(.failed, jitter: 7) == .retry(afterSeconds: 0.5), "jitter is clamped")
    }

    @Test(
        arguments: [
            ("3", 3.0), (" 12 ", 12.0), ("0", 0.0), ("", nil), ("-1", nil), ("1.5", nil),
            ("Wed, 21 Oct 2015 07:28:00 GMT", nil), ("99999999", nil), (nil, nil),
        ] as [(String?, Double?)])
    func retryAfterIsReadAsSeconds(text: String?, seconds: Double?) {
        #expect(ExportRetry.retryAfter(text) == seconds)
    }
}
