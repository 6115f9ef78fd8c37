import CloakCore
import CloakHTTP

/// One exchange through a route with operations, as pure state: select in the request, the
/// vault, send, select in the answer, the vault, answer. Events in, one action out
/// (`mutating func event(_:) -> Action`, as ``ExchangeState`` and async-http-client's
/// connection state machines); ``TransformedExchange`` carries the actions out.
///
/// Failures: the request's selections fail as the client's fault (1002, 1422) with nothing
/// forwarded (``Action/refuse(_:)``: nothing was started); the answer's as the upstream's (502
/// 1401 when it does not parse) with nothing of it passed on.
struct RouteExchange {
    /// What the route asks of the exchange.
    struct Plan {
        var request: [Route.Operation]
        var response: [Route.Operation]
        /// Most values one message may select: more in the request is 1002, in the answer 502 1401.
        var maxSelected: Int
        /// What to call the limit in the error.
        var limitName: String
        /// Whether there is a vault to turn values into aliases and back.
        var hasVault: Bool
    }

    /// What happened, for the audit line.
    struct Outcome: Sendable, Equatable {
        var revealed = 0
        var redacted = 0
        var upstreamStatus: Int?
    }

    /// Which message's values go to the vault (each side has its own caller and admission).
    enum Side: Equatable { case request, answer }

    enum Event {
        /// The client's request, as it goes upstream unless its values are rewritten.
        case start(body: [UInt8], headers: [(name: String, value: String)])
        /// The vault's values for the last ``Action/transform(_:_:)``, in the selection's order.
        case transformed(Result<[String], CloakError>)
        /// The upstream's answer to ``Action/send(body:headers:)``, or why there is none.
        case answered(Result<HTTPResponse, CloakError>)
    }

    enum Action {
        /// Refuse the request before anything was queued or sent.
        case refuse(CloakError)
        /// Run the selection's vault jobs (aliases, reveals) for `side`.
        case transform(MessageSelection, Side)
        /// Send the (rewritten) request upstream.
        case send(body: [UInt8], headers: [(name: String, value: String)])
        /// Answer the client; the exchange is over.
        case finish(HTTPResponse, Outcome)
        /// Nothing to do (an event after the end).
        case none
    }

    private enum State {
        case idle
        case transformingRequest(MessageSelection, body: [UInt8], headers: [(name: String, value: String)], Outcome)
        case awaitingAnswer(Outcome)
        case transformingAnswer(MessageSelection, upstream: HTTPResponse, Outcome)
        case done
    }

    let plan: Plan
    private var state = State.idle

    init(plan: Plan) { self.plan = plan }

    var isDone: Bool { if case .done = state { return true } else { return false } }

    mutating func event(_ event: Event) -> Action {
        switch (state, event) {
        case let (.idle, .start(body, headers)):
            return start(body: body, headers: headers)
        case let (.transformingRequest(selection, body, headers, outcome), .transformed(result)):
            switch result {
            case let .failure(error):
                return finish(.error(error), Outcome())
            case let .success(replacements):
                let (newBody, newHeaders) = selection.apply(replacements, body: body, headers: headers)
                state = .awaitingAnswer(outcome)
                return .send(body: newBody, headers: newHeaders)
            }
        case let (.awaitingAnswer(outcome), .answered(result)):
            switch result {
            case let .failure(error): return finish(.error(error), outcome)
            case let .success(upstream): return answer(upstream, outcome)
            }
        case let (.transformingAnswer(selection, upstream, outcome), .transformed(result)):
            switch result {
            case let .failure(error):
                return finish(.error(error), outcome)
            case let .success(replacements):
                var answer = upstream
                (answer.body, answer.headers) = selection.apply(
                    replacements, body: upstream.body, headers: upstream.headers)
                var done = outcome
                done.redacted += selection.redactCount
                done.revealed += selection.revealCount
                return finish(answer, done)
            }
        default:
            return .none
        }
    }

    private mutating func start(body: [UInt8], headers: [(name: String, value: String)]) -> Action {
        let selection: MessageSelection
        do {
            selection = try MessageSelection(body: body, headers: headers, operations: plan.request)
        } catch {
            state = .done
            return .refuse(error)
        }
        if let tooMany = tooMany(selection) {
            state = .done
            return .refuse(.malformed(tooMany))
        }
        let outcome = Outcome(revealed: selection.revealCount, redacted: selection.redactCount)
        guard !selection.isEmpty else {
            state = .awaitingAnswer(outcome)
            return .send(body: body, headers: headers)
        }
        guard plan.hasVault else {
            state = .done
            return .refuse(CloakError(.vaultUnavailable, "this server runs without a vault"))
        }
        state = .transformingRequest(selection, body: body, headers: headers, outcome)
        return .transform(selection, .request)
    }

    private mutating func answer(_ upstream: HTTPResponse, _ before: Outcome) -> Action {
        var outcome = before
        outcome.upstreamStatus = upstream.status
        guard !plan.response.isEmpty else { return finish(upstream, outcome) }
        let selection: MessageSelection
        do {
            selection = try MessageSelection(body: upstream.body, headers: upstream.headers, operations: plan.response)
        } catch {
            return finish(
                .error(CloakError(.unexpectedResponseDataFormat, "the upstream's answer: \(error.message)")), outcome)
        }
        guard !selection.isEmpty else { return finish(upstream, outcome) }
        // The answer is bounded like the request: its values go to the vault in one job.
        if let tooMany = tooMany(selection) {
            return finish(
                .error(CloakError(.unexpectedResponseDataFormat, "the upstream's answer: \(tooMany)")), outcome)
        }
        guard plan.hasVault else {
            return finish(.error(CloakError(.vaultUnavailable, "this server runs without a vault")), outcome)
        }
        state = .transformingAnswer(selection, upstream: upstream, outcome)
        return .transform(selection, .answer)
    }

    private mutating func finish(_ response: HTTPResponse, _ outcome: Outcome) -> Action {
        state = .done
        return .finish(response, outcome)
    }

    /// Why `selection` holds more values than one message may send to the vault, or nil.
    private func tooMany(_ selection: MessageSelection) -> String? {
        guard selection.items.count > plan.maxSelected else { return nil }
        return
            "the route's selectors pick \(selection.items.count) values; at most \(plan.maxSelected) (\(plan.limitName))"
    }
}
