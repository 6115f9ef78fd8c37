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
        case answered(Result<HTTPResponse, CloakError>, written: [[UInt8]] = [])
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

    private enum State {
        case idle
        case transformingRequest(MessageSelection, body: [UInt8], headers: [(name: String, value: String)], Outcome)
        case checkingCards(
            body: [UInt8], headers: [(name: String, value: String)], Outcome, RevealedValues, [CardScan.Finding])
        case awaitingAnswer(Outcome, RevealedValues)
        case transformingAnswer(MessageSelection, upstream: HTTPResponse, Outcome, RevealedValues)
        case done
    }

    let plan: Plan
    private var state = State.idle
    /// What the route wrote into the request (aliases, revealed values): not cards it forwards.
    private var produced: [String] = []
    /// Whether the unselected cards were redacted already (`unselected_cards: redact`, once).
    private var redactedUnselected = false

    /// The route's id, for refusals (empty on the way to a provider).
    private var routeID: String { plan.inbound?.routeID ?? "" }

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
                if plan.looksForRevealedValues { for bytes in written { revealed.add(bytes: bytes) } }
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

    /// Sends the request, once no card is left in it that no selector took (an inbound route's
    /// `unselected_cards`): what is card-shaped and not the route's own writing is asked of the
    /// vault first (its aliases are not cards).
    private mutating func forward(
        _ body: [UInt8], _ headers: [(name: String, value: String)], _ outcome: Outcome, _ revealed: RevealedValues
    ) -> Action {
        if let inbound = plan.inbound, inbound.unselectedCards != .allow {
            let mode = inbound.unselectedCards
            if let why = Self.unreadable(body, headers) {
                return fail(
                    .malformed(
                        "route \(routeID) looks for card numbers in what it forwards, and \(why) "
                            + "(routes[].unselected_cards: \(mode.rawValue))"), outcome)
            }
            let kind = SelectableBody.of(headers).kind
            let findings =
                (CardScan.body(body, kind: kind, skipping: Set(produced)) + CardScan.headers(headers)
                + CardScan.pairs(Array(inbound.query.utf8), prefix: "query")
                + CardScan.cards(in: CardScan.lenientDecode(Array(inbound.path.utf8)[...])).map {
                    CardScan.Finding(place: "path", text: String($0), whole: false)
                })
                .filter { finding in !produced.contains { $0.contains(finding.text.value) } }
            if !findings.isEmpty {
                var asked = Set<String>()
                let values = findings.map(\.text.value).filter { asked.insert($0).inserted }
                guard values.count <= plan.maxSelected else {
                    return fail(
                        .malformed(
                            "route \(routeID) would forward \(values.count) card-shaped values no selector took; "
                                + "at most \(plan.maxSelected) are looked up (\(plan.limitName))"), outcome)
                }
                guard plan.hasVault else { return decide(findings, body, headers, outcome, revealed) }
                state = .checkingCards(body: body, headers: headers, outcome, revealed, findings)
                return .checkAliases(values)
            }
        }
        state = .awaitingAnswer(outcome, revealed)
        return .send(body: body, headers: readable(headers, revealed))
    }

    /// Why a body cannot be looked at for cards, or nil: an encoding (gzip would hide them), two
    /// `Content-Type` headers (the upstream may read either), or a charset other than UTF-8.
    static func unreadable(_ body: [UInt8], _ headers: [(name: String, value: String)]) -> String? {
        guard !body.isEmpty else { return nil }
        var types = 0
        var charset: String?
        for header in headers {
            if header.name.caseInsensitiveEquals("Content-Encoding"), !Self.isIdentity(header.value) {
                return "an encoded body (Content-Encoding) cannot be read"
            }
            guard header.name.caseInsensitiveEquals("Content-Type") else { continue }
            types += 1
            // `; charset=…` (rare): read without Foundation, on every forwarded request.
            guard header.value.utf8.contains(UInt8(ascii: ";")) else { continue }
            for parameter in header.value.split(separator: ";").dropFirst() {
                let pair = parameter.split(separator: "=", maxSplits: 1)
                guard pair.count == 2, pair[0].filter({ $0 != " " }).lowercased() == "charset" else { continue }
                charset = pair[1].filter { $0 != " " && $0 != "\"" }.lowercased()
            }
        }
        if types > 1 { return "the body has \(types) Content-Type headers" }
        if let charset, !["utf-8", "utf8", "us-ascii"].contains(charset) {
            return "its charset is \(charset), not UTF-8"
        }
        return nil
    }

    /// Whether a `Content-Encoding` value is `identity` (spaces around it aside).
    private static func isIdentity(_ value: String) -> Bool {
        value.utf8.filter { $0 != 0x20 && $0 != 0x09 }.map { $0 | 0x20 }.elementsEqual("identity".utf8)
    }

    /// What becomes of the request once `cards` are known not to be aliases: sent when there are
    /// none; redacted once where the route says so and every one can be selected; else refused.
    private mutating func decide(
        _ cards: [CardScan.Finding], _ body: [UInt8], _ headers: [(name: String, value: String)],
        _ outcome: Outcome, _ revealed: RevealedValues
    ) -> Action {
        guard !cards.isEmpty else {
            state = .awaitingAnswer(outcome, revealed)
            return .send(body: body, headers: readable(headers, revealed))
        }
        if plan.inbound?.unselectedCards == .redact, plan.hasVault, !redactedUnselected,
            let operations = Self.redaction(of: cards)
        {
            redactedUnselected = true
            let selection: MessageSelection
            do { selection = try MessageSelection(body: body, headers: headers, operations: operations) } catch {
                return fail(error, outcome)
            }
            var more = outcome
            more.redacted += selection.redactCount
            state = .transformingRequest(selection, body: body, headers: headers, more)
            return .transform(selection, .request)
        }
        var places: [String] = []
        for card in cards where !places.contains(card.place) { places.append(card.place) }
        return fail(
            CloakError(
                .inputDataIsNotValid,
                "route \(routeID) would forward a card number that no selector took, at "
                    + places.joined(separator: ", ")
                    + " (routes[].unselected_cards: refuse; select it to redact it, or fix the selector)",
                extraInfo: [("route", .string(routeID)), ("paths", .array(places.map { .string($0) }))]),
            outcome)
    }

    /// Operations that alias each of `cards` where it is (a card alone: FPE_T_FOUR, keeping its
    /// length and last four; in a longer text: the text as a UUID alias); nil when one is where
    /// no selector reaches (the query, a key, a body of another type).
    static func redaction(of cards: [CardScan.Finding]) -> [Route.Operation]? {
        var whole = Route.Operation(format: .FPE_T_FOUR, storage: .persistent, json: [], form: [], header: [])
        var texts = Route.Operation(format: .UUID, storage: .persistent, json: [], form: [], header: [])
        for card in cards {
            if card.place.hasPrefix("$"), !card.place.contains("['<card>']"), let path = try? JSONPath(card.place) {
                if card.whole { whole.json.append(path) } else { texts.json.append(path) }
            } else if card.place.hasPrefix("form:"), !card.place.hasSuffix(":<card>") {
                let key = String(card.place.dropFirst(5))
                if card.whole { whole.form.append(key) } else { texts.form.append(key) }
            } else if card.place.hasPrefix("header:") {
                let name = String(card.place.dropFirst(7))
                if card.whole { whole.header.append(name) } else { texts.header.append(name) }
            } else {
                return nil
            }
        }
        return [whole, texts].filter { !$0.json.isEmpty || !$0.form.isEmpty || !$0.header.isEmpty }
    }

    private mutating func answer(_ upstream: HTTPResponse, _ before: Outcome, _ revealed: RevealedValues) -> Action {
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
    private mutating func finishAnswer(_ answer: HTTPResponse, _ outcome: Outcome, _ revealed: RevealedValues)
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
    private func readable(_ headers: [(name: String, value: String)], _ revealed: RevealedValues)
        -> [(name: String, value: String)]
    {
        guard !plan.response.isEmpty || !revealed.isEmpty else { return headers }
        var out = headers
        out.removeAll { $0.name.caseInsensitiveEquals("Accept-Encoding") }
        out.append(("Accept-Encoding", "identity"))
        return out
    }

    private mutating func finish(_ response: HTTPResponse, _ outcome: Outcome) -> Action {
        state = .done
        return .finish(response, outcome)
    }

    /// Answers with Cloak's `error`, noted in the outcome (a span's code is read there).
    private mutating func fail(_ error: CloakError, _ outcome: Outcome) -> Action {
        var failed = outcome
        failed.error = error
        return finish(.error(error), failed)
    }

    /// Why `selection` holds more values than one message may send to the vault, or nil.
    private func tooMany(_ selection: MessageSelection) -> String? {
        guard selection.items.count > plan.maxSelected else { return nil }
        return
            "the route's selectors pick \(selection.items.count) values; at most \(plan.maxSelected) (\(plan.limitName))"
    }
}
