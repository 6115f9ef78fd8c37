import Foundation

/// What the trace export does after one attempt to send a batch, as the OTLP/HTTP specification
/// says: a 2xx is done; 429, 502, 503 and 504, and a collector that cannot be reached or does
/// not answer in time, are tried again after a pause (the answer's `Retry-After` when it has
/// one, up to ``maxPauseAfterHint``; else an exponential backoff with jitter, up to
/// ``maxBackoff``); any other answer, or ``maxAttempts`` failures, drops the batch. Pure: the
/// jitter comes in with the outcome.
struct ExportRetry: Equatable {
    static let maxAttempts = 5
    static let firstBackoff = 0.5
    static let maxBackoff = 5.0
    static let maxPauseAfterHint = 15.0

    /// What one attempt came to.
    enum Outcome: Equatable {
        /// The collector answered with `status` (and `Retry-After` in seconds, when given).
        case answered(status: Int, retryAfter: Double?)
        /// No answer: refused, unreachable, TLS failed or timed out.
        case failed
        /// An answer that is not usable HTTP, or a request that cannot be sent: not retried.
        case unusable
    }

    enum Decision: Equatable {
        case exported
        case retry(afterSeconds: Double)
        /// Given up: the collector refused the batch (`status`) or kept failing (nil).
        case drop(status: Int?)
    }

    private(set) var attempts = 0

    /// - Parameter jitter: in `0...1`; the backoff is scaled to between half and all of itself.
    mutating func decide(_ outcome: Outcome, jitter: Double) -> Decision {
        attempts += 1
        let pause: Double
        switch outcome {
        case .answered(let status, _) where (200..<300).contains(status):
            return .exported
        case .answered(let status, let hint) where [429, 502, 503, 504].contains(status):
            guard attempts < Self.maxAttempts else { return .drop(status: status) }
            if let hint, hint >= 0 {
                pause = min(hint, Self.maxPauseAfterHint)
            } else {
                pause = backoff(jitter)
            }
        case .answered(let status, _):
            return .drop(status: status)
        case .failed:
            guard attempts < Self.maxAttempts else { return .drop(status: nil) }
            pause = backoff(jitter)
        case .unusable:
            return .drop(status: nil)
        }
        return .retry(afterSeconds: pause)
    }

    private func backoff(_ jitter: Double) -> Double {
        let full = min(Self.firstBackoff * Double(1 << min(attempts - 1, 16)), Self.maxBackoff)
        return full * (0.5 + 0.5 * min(max(jitter, 0), 1))
    }

    /// `Retry-After` as seconds: a number of seconds (an HTTP date is read as no hint).
    static func retryAfter(_ value: String?) -> Double? {
        guard let value = value?.trimmingCharacters(in: .whitespaces), !value.isEmpty,
            value.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }), value.utf8.count <= 6
        else { return nil }
        return Double(value)
    }
}
