import CloakCore
import CloakHTTP
import Testing

@testable import CloakService

/// ``RouteExchange`` as a table: every path of select → vault → send → select → vault, with a
/// failure at each step, as events in and actions out (no vault, no upstream, no loop).
@Suite struct RouteExchangeTests {
    typealias Operation = Route.Operation

    static func operation(_ action: Operation.Action, json: [String] = [], header: [String] = []) -> Operation {
        Operation(
            action: action, format: .UUID, storage: .persistent, json: json.map { try! JSONPath($0) }, form: [],
            header: header)
    }

    static let json: [(name: String, value: String)] = [("Content-Type", "application/json")]
    static let redactCard = [operation(.redact, json: ["$.card"])]
    static let revealToken = [operation(.reveal, json: ["$.token"])]

    static func plan(
        request: [Operation] = redactCard, response: [Operation] = [], maxSelected: Int = 10,
        hasVault: Bool = true
    ) -> RouteExchange.Plan {
        RouteExchange.Plan(
            request: request, response: response, maxSelected: maxSelected, limitName: "max_aliases",
            hasVault: hasVault)
    }

    static func body(_ text: String) -> [UInt8] { Array(text.utf8) }

    /// A short name for an action, to compare tables.
    static func name(_ action: RouteExchange.Action) -> String {
        switch action {
        case let .refuse(error): return "refuse \(error.code.rawValue)"
        case let .transform(selection, side): return "transform \(side) \(selection.items.count)"
        case let .checkAliases(values): return "check \(values.count)"
        case let .send(body, _): return "send \(String(decoding: body, as: UTF8.self))"
        case let .finish(response, outcome):
            return
                "finish \(response.status) r\(outcome.revealed) d\(outcome.redacted) u\(outcome.upstreamStatus.map(String.init) ?? "-")"
        case .none: return "none"
        }
    }

    static func answer(_ status: Int, _ text: String) -> HTTPResponse {
        HTTPResponse(status: status, headers: json, body: body(text))
    }

    @Test func aRequestWithValuesGoesToTheVaultThenUpstreamAndItsAnswerBack() {
        var exchange = RouteExchange(plan: Self.plan())
        #expect(
            Self.name(exchange.event(.start(body: Self.body(#"{"card":"4111"}"#), headers: Self.json)))
                == "transform request 1")
        #expect(Self.name(exchange.event(.transformed(.success(["tok_1"])))) == #"send {"card":"tok_1"}"#)
        #expect(
            Self.name(exchange.event(.answered(.success(Self.answer(201, #"{"ok":true}"#))))) == "finish 201 r0 d1 u201"
        )
        #expect(exchange.isDone)
        // Anything after the end is ignored.
        #expect(Self.name(exchange.event(.answered(.success(Self.answer(200, "{}"))))) == "none")
    }

    /// Issue 57: a required selector that takes nothing refuses the request (the client's fault
    /// inbound, 422; the route's on the way to a provider, 502) or the answer (502).
    @Test func aRequiredSelectorThatTakesNothingRefuses() {
        var required = Self.operation(.reveal, json: ["$.token"])
        required.required = ["$.token"]
        for (clients, code) in [(true, 1001), (false, 1401)] {
            var plan = Self.plan(request: [required])
            plan.inbound = clients ? RouteExchange.Inbound(routeID: "r1", unselectedCards: .allow) : nil
            var machine = RouteExchange(plan: plan)
            let action = machine.event(.start(body: Self.body(#"{"tokn":"x"}"#), headers: Self.json))
            #expect(Self.name(action) == "refuse \(code)")
        }
        var machine = RouteExchange(plan: Self.plan(request: [], response: [required]))
        #expect(Self.name(machine.event(.start(body: Self.body("{}"), headers: Self.json))) == "send {}")
        let answer = HTTPResponse(status: 200, headers: Self.json, body: Self.body(#"{"other":1}"#))
        #expect(Self.name(machine.event(.answered(.success(answer)))).hasPrefix("finish 502"))
    }

    /// Issue 57: what an inbound route forwards is looked at for cards once its selectors ran;
    /// the vault says which card-shaped values are its aliases.
    @Test func anUnselectedCardIsCheckedThenRefusedOrSent() {
        var plan = Self.plan(request: [], hasVault: true)
        plan.inbound = RouteExchange.Inbound(routeID: "r1", unselectedCards: .refuse)
        let body = Self.body(#"{"pan":"4111111111111111"}"#)
        var refused = RouteExchange(plan: plan)
        #expect(Self.name(refused.event(.start(body: body, headers: Self.json))) == "check 1")
        #expect(Self.name(refused.event(.aliasesChecked(.success([])))) == "finish 422 r0 d0 u-")
        var alias = RouteExchange(plan: plan)
        _ = alias.event(.start(body: body, headers: Self.json))
        #expect(Self.name(alias.event(.aliasesChecked(.success(["4111111111111111"])))).hasPrefix("send "))
        plan.inbound?.unselectedCards = .allow
        var allowed = RouteExchange(plan: plan)
        #expect(Self.name(allowed.event(.start(body: body, headers: Self.json))).hasPrefix("send "))
    }

    @Test func nothingSelectedIsSentByteIdenticalWithoutTheVault() {
        var exchange = RouteExchange(plan: Self.plan())
        let text = #"{"other":"x"}"#
        #expect(Self.name(exchange.event(.start(body: Self.body(text), headers: Self.json))) == "send \(text)")
        #expect(Self.name(exchange.event(.answered(.success(Self.answer(200, "{}"))))) == "finish 200 r0 d0 u200")
    }

    @Test(arguments: [
        // A body that does not parse, too many values, no vault: refused before anything is sent.
        (#"{"card":"#, 10, true, "refuse 1002"),
        (#"{"card":"4111"}"#, 0, true, "refuse 1002"),
        (#"{"card":"4111"}"#, 10, false, "refuse 1500"),
    ])
    func aRequestThatCannotGoIsRefusedBeforeAnythingIsSent(
        text: String, maxSelected: Int, hasVault: Bool, action: String
    ) {
        var exchange = RouteExchange(plan: Self.plan(maxSelected: maxSelected, hasVault: hasVault))
        #expect(Self.name(exchange.event(.start(body: Self.body(text), headers: Self.json))) == action)
        #expect(exchange.isDone)
        #expect(Self.name(exchange.event(.transformed(.success(["x"])))) == "none")
    }

    @Test func aVaultFailureOnTheRequestAnswersItsErrorAndSendsNothing() {
        var exchange = RouteExchange(plan: Self.plan())
        _ = exchange.event(.start(body: Self.body(#"{"card":"4111"}"#), headers: Self.json))
        let action = exchange.event(.transformed(.failure(CloakError(.vaultUnavailable, "down"))))
        #expect(Self.name(action) == "finish 503 r0 d0 u-")
        #expect(exchange.isDone)
        #expect(Self.name(exchange.event(.answered(.success(Self.answer(200, "{}"))))) == "none")
    }

    @Test(arguments: [
        (CloakError(.unexpectedResponseType, "unreachable"), "finish 502 r0 d1 u-"),
        (CloakError(.upstreamTimeout, "slow"), "finish 504 r0 d1 u-"),
        (CloakError(.unexpectedResponseDataFormat, "garbled"), "finish 502 r0 d1 u-"),
    ])
    func anUpstreamFailureIsAnsweredWithWhatWasDone(error: CloakError, action: String) {
        var exchange = RouteExchange(plan: Self.plan())
        _ = exchange.event(.start(body: Self.body(#"{"card":"4111"}"#), headers: Self.json))
        _ = exchange.event(.transformed(.success(["tok_1"])))
        #expect(Self.name(exchange.event(.answered(.failure(error)))) == action)
    }

    @Test func anAnswersValuesAreRevealedBeforeTheClientSeesThem() {
        var exchange = RouteExchange(plan: Self.plan(request: [], response: Self.revealToken))
        #expect(Self.name(exchange.event(.start(body: Self.body("{}"), headers: Self.json))) == "send {}")
        #expect(
            Self.name(exchange.event(.answered(.success(Self.answer(200, #"{"token":"tok_1"}"#)))))
                == "transform answer 1")
        let action = exchange.event(.transformed(.success(["4111"])))
        guard case let .finish(response, outcome) = action else {
            Issue.record("expected finish, got \(Self.name(action))"); return
        }
        #expect(String(decoding: response.body, as: UTF8.self) == #"{"token":"4111"}"#)
        #expect(outcome == RouteExchange.Outcome(revealed: 1, redacted: 0, upstreamStatus: 200))
    }

    @Test(arguments: [
        // An answer that does not parse, too many values, no vault, the vault failing: each 502
        // (the upstream has acted; a 4xx or 503 would say nothing happened).
        (#"{"token":"#, 10, true, nil as CloakError?, "finish 502 r0 d0 u200"),
        (#"{"token":"tok_1"}"#, 0, true, nil, "finish 502 r0 d0 u200"),
        (#"{"token":"tok_1"}"#, 10, false, nil, "finish 502 r0 d0 u200"),
        (#"{"token":"tok_1"}"#, 10, true, CloakError(.aliasNotFound, "gone"), "finish 502 r0 d0 u200"),
        (#"{"token":"tok_1"}"#, 10, true, CloakError(.vaultUnavailable, "down"), "finish 502 r0 d0 u200"),
    ])
    func anAnswerThatCannotBeTransformedIsNotPassedOn(
        text: String, maxSelected: Int, hasVault: Bool, vaultError: CloakError?,
        action: String
    ) {
        var exchange = RouteExchange(
            plan: Self.plan(
                request: [], response: Self.revealToken, maxSelected: maxSelected,
                hasVault: hasVault))
        _ = exchange.event(.start(body: Self.body("{}"), headers: Self.json))
        var last = exchange.event(.answered(.success(Self.answer(200, text))))
        if case .transform = last, let vaultError { last = exchange.event(.transformed(.failure(vaultError))) }
        #expect(Self.name(last) == action)
        if case let .finish(response, _) = last {
            let text = String(decoding: response.body, as: UTF8.self)
            #expect(!text.contains("tok_1"))
            #expect(text.contains("1401") && text.contains("the upstream answered 200"), "\(text)")
        }
        #expect(exchange.isDone)
    }

    @Test func anAnswerWithNothingSelectedPassesAsItCame() {
        var exchange = RouteExchange(plan: Self.plan(request: [], response: Self.revealToken))
        _ = exchange.event(.start(body: Self.body("{}"), headers: Self.json))
        let action = exchange.event(.answered(.success(Self.answer(404, #"{"other":1}"#))))
        guard case let .finish(response, _) = action else {
            Issue.record("expected finish, got \(Self.name(action))"); return
        }
        #expect(response.status == 404)
        #expect(String(decoding: response.body, as: UTF8.self) == #"{"other":1}"#)
    }

    @Test func eventsOutOfOrderDoNothing() {
        var exchange = RouteExchange(plan: Self.plan())
        #expect(Self.name(exchange.event(.answered(.success(Self.answer(200, "{}"))))) == "none")
        #expect(Self.name(exchange.event(.transformed(.success([])))) == "none")
        _ = exchange.event(.start(body: Self.body(#"{"card":"4111"}"#), headers: Self.json))
        #expect(Self.name(exchange.event(.start(body: [], headers: []))) == "none")
        #expect(Self.name(exchange.event(.answered(.success(Self.answer(200, "{}"))))) == "none")
        #expect(!exchange.isDone)
    }

    // MARK: Bodies the selectors cannot read

    @Test(
        arguments: [
            ("text/plain", [("Content-Type", "text/plain")]),
            ("no type", []),
            ("two types", [("Content-Type", "text/plain"), ("Content-Type", "application/json")]),
            ("form for JSON selectors", [("Content-Type", "application/x-www-form-urlencoded")]),
        ] as [(String, [(String, String)])])
    func aRequestBodyTheSelectorsCannotReadIsRefused(name: String, headers: [(String, String)]) {
        var exchange = RouteExchange(plan: Self.plan())
        let action = exchange.event(.start(body: Self.body(#"{"card":"4111111111111111"}"#), headers: headers))
        #expect(Self.name(action) == "refuse 1002", "\(name)")
        if case let .refuse(error) = action { #expect(!error.message.contains("4111"), "\(name)") }
        // Without a body, or on a route without body selectors, there is nothing to miss.
        var empty = RouteExchange(plan: Self.plan())
        #expect(Self.name(empty.event(.start(body: [], headers: headers))) == "send ", "\(name)")
        var none = RouteExchange(plan: Self.plan(request: [Self.operation(.redact, header: ["X-Card"])]))
        #expect(Self.name(none.event(.start(body: Self.body("x"), headers: headers))) == "send x", "\(name)")
    }

    @Test func anAnswerTheResponseSelectorsCannotReadIs502() {
        var exchange = RouteExchange(plan: Self.plan(request: [], response: Self.redactCard))
        _ = exchange.event(.start(body: Self.body("{}"), headers: Self.json))
        let answer = HTTPResponse(
            status: 200, headers: [("Content-Type", "text/html")], body: Self.body("<p>4111111111111111</p>"))
        #expect(Self.name(exchange.event(.answered(.success(answer)))) == "finish 502 r0 d0 u200")
    }

    // MARK: Values revealed on the way out, in the answer

    static let revealCard = [operation(.reveal, json: ["$.card"])]

    /// Sends `{"card":"tok_1"}` revealed as `value`; returns the headers sent and the exchange.
    static func revealed(_ value: String, plan: RouteExchange.Plan) -> (RouteExchange, [(name: String, value: String)])
    {
        var exchange = RouteExchange(plan: plan)
        _ = exchange.event(
            .start(body: body(#"{"card":"tok_1"}"#), headers: json + [("Accept-Encoding", "gzip, br")]))
        guard case let .send(_, headers) = exchange.event(.transformed(.success([value]))) else {
            Issue.record("expected send")
            return (exchange, [])
        }
        return (exchange, headers)
    }

    @Test func anAnswerEchoingARevealedValueIsNotPassedOn() {
        let card = "4111111111111111"
        for type in ["text/plain", "application/json", "application/octet-stream"] {
            var (exchange, _) = Self.revealed(card, plan: Self.plan(request: Self.revealCard))
            let echo = HTTPResponse(
                status: 200, headers: [("Content-Type", type)], body: Self.body(#"{"card":"\#(card)"}"#))
            let action = exchange.event(.answered(.success(echo)))
            #expect(Self.name(action) == "finish 502 r1 d0 u200", "\(type)")
            if case let .finish(response, _) = action {
                #expect(!String(decoding: response.body, as: UTF8.self).contains(card))
            }
        }
        // In a header value too.
        var (exchange, _) = Self.revealed(card, plan: Self.plan(request: Self.revealCard))
        let inHeader = HTTPResponse(status: 200, headers: [("X-Echo", "pan=\(card)")], body: [])
        #expect(Self.name(exchange.event(.answered(.success(inHeader)))) == "finish 502 r1 d0 u200")
    }

    @Test func anAnswerWithoutTheRevealedValueOrToACallerWhoMaySeeItPasses() {
        let card = "4111111111111111"
        var (plain, _) = Self.revealed(card, plan: Self.plan(request: Self.revealCard))
        #expect(
            Self.name(plain.event(.answered(.success(Self.answer(200, #"{"id":"ch_1","last4":"1111"}"#)))))
                == "finish 200 r1 d0 u200")
        var mayReveal = Self.plan(request: Self.revealCard)
        mayReveal.callerMaySeeValues = true
        var (entitled, _) = Self.revealed(card, plan: mayReveal)
        #expect(
            Self.name(entitled.event(.answered(.success(Self.answer(200, #"{"card":"\#(card)"}"#)))))
                == "finish 200 r1 d0 u200")
        // A CVC is any other three digits in an answer: not looked for.
        var (cvc, _) = Self.revealed("737", plan: Self.plan(request: Self.revealCard))
        #expect(
            Self.name(cvc.event(.answered(.success(Self.answer(200, #"{"amount":737}"#))))) == "finish 200 r1 d0 u200")
    }

    @Test func answersThatAreReadAreAskedForUnencoded() {
        let card = "4111111111111111"
        var (exchange, headers) = Self.revealed(card, plan: Self.plan(request: Self.revealCard))
        #expect(headers.filter { $0.name.caseInsensitiveEquals("Accept-Encoding") }.map(\.value) == ["identity"])
        let gzip = HTTPResponse(
            status: 200, headers: Self.json + [("Content-Encoding", "gzip")], body: [0x1F, 0x8B, 8, 0])
        #expect(Self.name(exchange.event(.answered(.success(gzip)))) == "finish 502 r1 d0 u200")
        // Also behind a first Content-Encoding that says identity.
        var (second, _) = Self.revealed(card, plan: Self.plan(request: Self.revealCard))
        let layered = HTTPResponse(
            status: 200, headers: Self.json + [("Content-Encoding", "identity"), ("Content-Encoding", "gzip")],
            body: [0x1F, 0x8B, 8, 0])
        #expect(Self.name(second.event(.answered(.success(layered)))) == "finish 502 r1 d0 u200")
        // A route that reads no answer leaves the client's Accept-Encoding alone.
        var redacting = RouteExchange(plan: Self.plan())
        _ = redacting.event(
            .start(body: Self.body(#"{"card":"4111"}"#), headers: Self.json + [("Accept-Encoding", "gzip")]))
        guard case let .send(_, sent) = redacting.event(.transformed(.success(["tok_1"]))) else {
            Issue.record("expected send"); return
        }
        #expect(sent.filter { $0.name.caseInsensitiveEquals("Accept-Encoding") }.map(\.value) == ["gzip"])
    }
}
