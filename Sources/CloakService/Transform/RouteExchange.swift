import CloakCore
import CloakHTTP
import Foundation

/// One exchange through a route with operations, as pure state: select in the request, the
/// vault, send, select in the answer, the vault, answer. Events in, one action out
/// (`mutating func event(_:) -> Action`, as ``ExchangeState`` and async-http-client's
/// connection state machines); ``TransformedExchange`` carries the actions out.
///
/// Failures: the request's selections fail as the client's fault (1002, 1422) with nothing
/// forwarded (``Action/refuse(_:)``: nothing was started). Once the upstream has answered, every
/// failure is 502 1401 naming the upstream's status (it has acted: a 4xx would say the request
/// was the client's mistake and nothing happened), and nothing of the answer is passed on: an
/// answer that does not parse, is of a type or encoding the response operations cannot read,
/// holds too many values, or fails in the vault; and an answer that holds a value revealed on
/// the way to the upstream (``RevealedValues``), unless the route reveals into answers.
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
        /// Whether the caller may see revealed values (a token with `aliases:reveal`).
        var callerMaySeeValues = false
        /// An inbound route's request (its refusals are the client's: 422), looked at for cards
        /// no selector took; nil on the way to a provider (egress: the backend's own request,
        /// whose refusals are 502).
        var inbound: Inbound?

        /// Whether the request's revealed values are looked for in the answer: not when the
        /// caller may see them anyway (it holds `aliases:reveal`, as a route that reveals into
        /// answers requires).
        var looksForRevealedValues: Bool { !callerMaySeeValues && !response.contains { $0.action == .reveal } }
    }

    /// What an inbound route's exchange needs to look for cards no selector took.
    struct Inbound: Sendable {
        /// The route's id, named by its refusals.
        var routeID: String
        /// `unselected_cards`: what to do with a card still in the request (``CardScan``).
        var unselectedCards: Route.UnselectedCards
        /// The request's query and the path after the route's prefix, as sent: forwarded as
        /// they are, so looked at for cards too.
        var query = ""
        var path = ""
        /// What Cloak wrote into the request before the exchange (a form route's aliases): not
        /// cards, like the exchange's own.
        var produced: [String] = []
    }

    /// What happened, for the audit line.
    struct Outcome: Sendable, Equatable {
        var revealed = 0
        var redacted = 0
        var upstreamStatus: Int?
        /// The request's selectors that took a value, and those that took none (the logs').
        var matched: [String] = []
        var missed: [String] = []
        /// The error the client is answered with, when the answer is Cloak's own (nil: the
        /// upstream's answer, whatever it holds).
        var error: CloakError?
    }

    /// Which message's values go to the vault (each side has its own caller and admission).
    enum Side: Equatable { case request, answer }

    enum Event {
        /// The client's request, as it goes upstream unless its values are rewritten.
        case start(body: [UInt8], headers: [(name: String, value: String)])
        /// The vault's values for the last ``Action/transform(_:_:)``, in the selection's order.
        case transformed(Result<[String], CloakError>)
        /// The upstream's answer to ``Action/send(body:headers:)``, or why there is none, and
        /// what the route's steps wrote over the request's values (``RevealedValues/add(bytes:)``).
        case answered(Result<HTTPResponse, CloakError>, written: StepWrites = StepWrites())
        /// Which of the card-shaped values of the last ``Action/checkAliases(_:)`` are the vault's aliases.
        case aliasesChecked(Result<Set<String>, CloakError>)
    }

    enum Action {
        /// Refuse the request before anything was queued or sent.
        case refuse(CloakError)
        /// Run the selection's vault jobs (aliases, reveals) for `side`.
        case transform(MessageSelection, Side)
        /// Ask the vault which of these card-shaped values are its own aliases.
        case checkAliases([String])
        /// Send the (rewritten) request upstream.
        case send(body: [UInt8], headers: [(name: String, value: String)])
        /// Answer the client; the exchange is over.
        case finish(HTTPResponse, Outcome)
        /// Nothing to do (an event after the end).
        case none
    }

    enum State {
        case idle
        case transformingRequest(MessageSelection, body: [UInt8], headers: [(name: String, value: String)], Outcome)
        case checkingCards(
            body: [UInt8], headers: [(name: String, value: String)], Outcome, RevealedValues, [CardScan.Finding])
        case awaitingAnswer(Outcome, RevealedValues)
        case transformingAnswer(MessageSelection, upstream: HTTPResponse, Outcome, RevealedValues)
        case done
    }

    let plan: Plan
    var state = State.idle
    /// What the route wrote into the request (aliases, revealed values): not cards it forwards.
    var produced: [String] = []
    /// Whether the unselected cards were redacted already (`unselected_cards: redact`, once).
    var redactedUnselected = false

    /// The route's id, for refusals (empty on the way to a provider).
    var routeID: String { plan.inbound?.routeID ?? "" }

    init(plan: Plan) {
        self.plan = plan
        produced = plan.inbound?.produced ?? []
    }

    var isDone: Bool { if case .done = state { return true } else { return false } }

    mutating func event(_ event: Event) -> Action {
        switch (state, event) {
        case let (.idle, .start(body, headers)):
            return start(body: body, headers: headers)
        case let (.transformingRequest(selection, body, headers, outcome), .transformed(result)):
            switch result {
            case let .failure(error):
                return fail(error, Outcome())
            case let .success(replacements):
                let (newBody, newHeaders) = selection.apply(replacements, body: body, headers: headers)
                var revealed = RevealedValues()
                if plan.looksForRevealedValues {
                    for (item, value) in zip(selection.items, replacements) where item.operation.action == .reveal {
                        revealed.add(value)
                    }
                }
                produced += replacements
                return forward(newBody, newHeaders, outcome, revealed)
            }
        case let (.checkingCards(body, headers, outcome, revealed, findings), .aliasesChecked(result)):
            switch result {
            case let .failure(error): return fail(error, outcome)
            case let .success(aliases):
                return decide(findings.filter { !aliases.contains($0.text.value) }, body, headers, outcome, revealed)
            }
        case let (.awaitingAnswer(outcome, revealed), .answered(result, written)):
            switch result {
            case let .failure(error): return fail(error, outcome)
            case let .success(upstream):
                var revealed = revealed
                if plan.looksForRevealedValues { revealed.add(written) }
                return answer(upstream, outcome, revealed)
            }
        case let (.transformingAnswer(selection, upstream, outcome, revealed), .transformed(result)):
            switch result {
            case let .failure(error):
                return fail(Self.upstreamFailure(upstream, error.message), outcome)
            case let .success(replacements):
                var answer = upstream
                (answer.body, answer.headers) = selection.apply(
                    replacements, body: upstream.body, headers: upstream.headers)
                var done = outcome
                done.redacted += selection.redactCount
                done.revealed += selection.revealCount
                return finishAnswer(answer, done, revealed)
            }
        default:
            return .none
        }
    }

    mutating func start(body: [UInt8], headers: [(name: String, value: String)]) -> Action {
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
        var outcome = Outcome(revealed: selection.revealCount, redacted: selection.redactCount)
        (outcome.matched, outcome.missed) = selection.selectors(of: plan.request)
        let required = selection.missedRequired(of: plan.request)
        if !required.isEmpty {
            state = .done
            let what =
                "the required selector\(required.count == 1 ? "" : "s") \(required.joined(separator: ", ")) took nothing"
            return .refuse(
                plan.inbound != nil
                    ? CloakError(
                        .inputDataIsNotValid, "route \(routeID): \(what) in the request; nothing was sent",
                        extraInfo: [("route", .string(routeID)), ("missed", .array(required.map { .string($0) }))])
                    : CloakError(.unexpectedResponseDataFormat, "\(what) in the request; nothing was sent upstream"))
        }
        guard !selection.isEmpty else { return forward(body, headers, outcome, RevealedValues()) }
        guard plan.hasVault else {
            state = .done
            return .refuse(CloakError(.vaultUnavailable, "this server runs without a vault"))
        }
        state = .transformingRequest(selection, body: body, headers: headers, outcome)
        return .transform(selection, .request)
    }

}
