import CloakCore
import CloakHTTP
import Foundation

/// The upstream's answer: selected and turned back by the response operations, refused when it
/// cannot be read or holds a value revealed on the way (`RevealedValues`).
extension RouteExchange {
    mutating func answer(_ upstream: HTTPResponse, _ before: Outcome, _ revealed: RevealedValues) -> Action {
        var outcome = before
        outcome.upstreamStatus = upstream.status
        guard !plan.response.isEmpty || !revealed.isEmpty else { return finish(upstream, outcome) }
        // Asked for unencoded (``readable(_:_:)``); an upstream that encodes anyway (in any of
        // its Content-Encoding headers) is not read.
        if Self.isEncoded(upstream) {
            return fail(
                Self.upstreamFailure(upstream, "it is encoded (Content-Encoding), and this route reads answers"),
                outcome)
        }
        guard !plan.response.isEmpty else { return finishAnswer(upstream, outcome, revealed) }
        let selection: MessageSelection
        do {
            selection = try MessageSelection(body: upstream.body, headers: upstream.headers, operations: plan.response)
        } catch {
            return fail(Self.upstreamFailure(upstream, error.message), outcome)
        }
        let required = selection.missedRequired(of: plan.response)
        if !required.isEmpty {
            return fail(
                Self.upstreamFailure(
                    upstream, "the required selectors \(required.joined(separator: ", ")) took nothing"),
                outcome)
        }
        guard !selection.isEmpty else { return finishAnswer(upstream, outcome, revealed) }
        // The answer is bounded like the request: its values go to the vault in one job.
        if let tooMany = tooMany(selection) {
            return fail(Self.upstreamFailure(upstream, tooMany), outcome)
        }
        guard plan.hasVault else {
            return fail(Self.upstreamFailure(upstream, "this server runs without a vault"), outcome)
        }
        state = .transformingAnswer(selection, upstream: upstream, outcome, revealed)
        return .transform(selection, .answer)
    }

    /// The answer for the client, unless it holds a value revealed on the way to the upstream.
    mutating func finishAnswer(_ answer: HTTPResponse, _ outcome: Outcome, _ revealed: RevealedValues)
        -> Action
    {
        guard revealed.appear(in: answer) else { return finish(answer, outcome) }
        return fail(
            Self.upstreamFailure(
                answer, "it holds a value revealed on the way to the upstream, which is not passed on"),
            outcome)
    }

    /// Whether any of `answer`'s Content-Encoding headers names a coding other than `identity`.
    static func isEncoded(_ answer: HTTPResponse) -> Bool {
        answer.headers.contains {
            $0.name.caseInsensitiveEquals("Content-Encoding")
                && !$0.value.trimmingCharacters(in: .whitespaces).caseInsensitiveEquals("identity")
        }
    }

    /// 502 1401 for an answer that cannot be passed on, naming its status (the upstream acted).
    /// The upstream's status is a field too (`extraInfo.upstreamStatus`): a client decides on it
    /// (a provider's 402 declined, its 500 failed) without reading prose.
    static func upstreamFailure(_ upstream: HTTPResponse, _ why: String) -> CloakError {
        CloakError(
            .unexpectedResponseDataFormat, "the upstream answered \(upstream.status), but its answer: \(why)",
            extraInfo: [("upstreamStatus", .int(upstream.status))])
    }

    /// `headers` as sent when the answer will be read: asking for it unencoded (the client's
    /// `Accept-Encoding` would let a compressed answer past the operations and the look for
    /// revealed values).
    func readable(_ headers: [(name: String, value: String)], _ revealed: RevealedValues)
        -> [(name: String, value: String)]
    {
        guard !plan.response.isEmpty || !revealed.isEmpty else { return headers }
        var out = headers
        out.removeAll { $0.name.caseInsensitiveEquals("Accept-Encoding") }
        out.append(("Accept-Encoding", "identity"))
        return out
    }

    mutating func finish(_ response: HTTPResponse, _ outcome: Outcome) -> Action {
        state = .done
        return .finish(response, outcome)
    }

    /// Answers with Cloak's `error`, noted in the outcome (a span's code is read there).
    mutating func fail(_ error: CloakError, _ outcome: Outcome) -> Action {
        var failed = outcome
        failed.error = error
        return finish(.error(error), failed)
    }

    /// Why `selection` holds more values than one message may send to the vault, or nil.
    func tooMany(_ selection: MessageSelection) -> String? {
        guard selection.items.count > plan.maxSelected else { return nil }
        return
            "the route's selectors pick \(selection.items.count) values; at most \(plan.maxSelected) (\(plan.limitName))"
    }
}
