import CloakCore
import CloakHTTP
import CloakVault

/// One exchange through a route with operations: the request's operations, the upstream call,
/// then the answer's operations, each message in at most two vault jobs (aliases, reveals).
///
/// Failures: the request's selections fail as the client's fault (1002, 1422) with nothing
/// forwarded; the answer's as the upstream's (502 1401 when it does not parse) with nothing of
/// it passed on.
struct TransformedExchange: Sendable {
    let vault: VaultClient?
    let request: [ServiceConfiguration.RouteOperation]
    let response: [ServiceConfiguration.RouteOperation]
    /// Who aliases values redacted from the request, and from the answer.
    let requestCaller: AliasCaller
    let responseCaller: AliasCaller
    /// Most values one message may select: more in the request is 1002, in the answer 502 1401.
    let maxSelected: Int
    /// What to call the limit in the error.
    let limitName: String

    /// What happened, for the audit line.
    struct Outcome: Sendable {
        var revealed = 0
        var redacted = 0
        var upstreamStatus: Int?
    }

    /// The upstream call: the rewritten body and headers in, the answer (or its error) out.
    typealias Send = @Sendable (_ body: [UInt8], _ headers: [(name: String, value: String)],
                                _ done: @escaping @Sendable (Result<HTTPResponse, CloakError>) -> Void) -> Void

    /// Selects in the request now (so a malformed one fails before anything is queued), then
    /// runs the rest; `finish` gets the client's answer and what was done.
    func start(body: [UInt8], headers: [(name: String, value: String)], send: @escaping Send,
               finish: @escaping @Sendable (HTTPResponse, Outcome) -> Void) throws(CloakError) {
        let selection = try MessageSelection(body: body, headers: headers, operations: request)
        if let tooMany = tooMany(selection) { throw .malformed(tooMany) }
        let outcome = Outcome(revealed: selection.revealCount, redacted: selection.redactCount)
        let answer: @Sendable (Result<HTTPResponse, CloakError>, Outcome) -> Void = { result, outcome in
            switch result {
            case let .failure(error): finish(.error(error), outcome)
            case let .success(upstream): transformAnswer(upstream, outcome: outcome, finish: finish)
            }
        }
        guard !selection.isEmpty else {
            return send(body, headers) { answer($0, outcome) }
        }
        guard let vault else { throw CloakError(.vaultUnavailable, "this server runs without a vault") }
        MessageTransformer(vault: vault, caller: requestCaller).run(selection) { result in
            switch result {
            case let .failure(error):
                finish(.error(error), Outcome())
            case let .success(replacements):
                let (newBody, newHeaders) = selection.apply(replacements, body: body, headers: headers)
                send(newBody, newHeaders) { answer($0, outcome) }
            }
        }
    }

    /// Why `selection` holds more values than one message may send to the vault, or nil.
    private func tooMany(_ selection: MessageSelection) -> String? {
        guard selection.items.count > maxSelected else { return nil }
        return "the route's selectors pick \(selection.items.count) values; at most \(maxSelected) (\(limitName))"
    }

    private func transformAnswer(_ upstream: HTTPResponse, outcome before: Outcome,
                                 finish: @escaping @Sendable (HTTPResponse, Outcome) -> Void) {
        var counted = before
        counted.upstreamStatus = upstream.status
        let outcome = counted
        guard !response.isEmpty else { return finish(upstream, outcome) }
        let selection: MessageSelection
        do {
            selection = try MessageSelection(body: upstream.body, headers: upstream.headers, operations: response)
        } catch {
            return finish(.error(CloakError(.unexpectedResponseDataFormat, "the upstream's answer: \(error.message)")), outcome)
        }
        guard !selection.isEmpty else { return finish(upstream, outcome) }
        // The answer is bounded like the request: its values go to the vault in one job.
        if let tooMany = tooMany(selection) {
            return finish(.error(CloakError(.unexpectedResponseDataFormat, "the upstream's answer: \(tooMany)")), outcome)
        }
        guard let vault else { return finish(.error(CloakError(.vaultUnavailable, "this server runs without a vault")), outcome) }
        MessageTransformer(vault: vault.answering, caller: responseCaller).run(selection) { result in
            switch result {
            case let .failure(error):
                finish(.error(error), outcome)
            case let .success(replacements):
                var answer = upstream
                (answer.body, answer.headers) = selection.apply(replacements, body: upstream.body, headers: upstream.headers)
                var done = outcome
                done.redacted += selection.redactCount
                done.revealed += selection.revealCount
                finish(answer, done)
            }
        }
    }
}

extension LoopHandle {
    /// Sends `request` upstream and maps its failures as routes do: 502 1400 (unreachable),
    /// 502 1401 (unusable answer), 504 1408 (no answer in time).
    func call(_ request: UpstreamRequest, done: @escaping @Sendable (Result<HTTPResponse, CloakError>) -> Void) {
        send(request) { result in
            switch result {
            case let .success(response): done(.success(response))
            case let .failure(.unreachable(why)): done(.failure(CloakError(.unexpectedResponseType, why)))
            case let .failure(.badResponse(why)): done(.failure(CloakError(.unexpectedResponseDataFormat, why)))
            case .failure(.timeout):
                done(.failure(CloakError(.upstreamTimeout, "the upstream did not answer within \(request.timeoutSeconds) s")))
            }
        }
    }
}
