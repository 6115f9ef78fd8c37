import CloakCore
import CloakHTTP
import CloakVault

/// Carries out a ``RouteExchange``'s actions: the vault jobs and the upstream call. The
/// decisions are all the state machine's; this driver only does the I/O, on the request's loop
/// (the vault's and the upstream's completions come back there), one action at a time.
struct TransformedExchange: Sendable {
    let vault: VaultClient?
    let request: [Route.Operation]
    let response: [Route.Operation]
    /// Who aliases values redacted from the request, and from the answer.
    let requestCaller: AliasCaller
    let responseCaller: AliasCaller
    let maxSelected: Int
    let limitName: String
    /// Whether the caller may see revealed values (``RouteExchange/Plan/callerMaySeeValues``).
    var callerMaySeeValues = false
    /// The route's file reveals, run on the final body right before it is sent.
    var files: FileRevealing?
    /// An inbound route's look for cards no selector took (``RouteExchange/Plan/inbound``).
    var inbound: RouteExchange.Inbound?

    typealias Outcome = RouteExchange.Outcome

    /// The upstream call: the rewritten body and headers in, the answer (or its error) out,
    /// with what the route's steps wrote over the body (``RouteExchange/Event/answered(_:written:)``).
    typealias Send =
        @Sendable (
            _ body: HTTPBody, _ headers: [(name: String, value: String)],
            _ done: @escaping @Sendable (Result<HTTPResponse, CloakError>, _ written: StepWrites) -> Void
        ) -> Void

    /// Selects in the request now (a malformed one throws before anything is queued), then runs
    /// the rest on `loop` (the request's; nil in process); `finish` gets the client's answer and
    /// what was done.
    func start(
        body: [UInt8], headers: [(name: String, value: String)], loop: LoopHandle?, send: @escaping Send,
        finish: @escaping @Sendable (HTTPResponse, Outcome) -> Void
    ) throws(CloakError) {
        let plan = RouteExchange.Plan(
            request: request, response: response, maxSelected: maxSelected,
            limitName: limitName, hasVault: vault != nil, callerMaySeeValues: callerMaySeeValues,
            inbound: inbound)
        let driver = Driver(
            machine: LoopBound(RouteExchange(plan: plan), on: loop), exchange: self, send: send, finish: finish)
        let first = driver.machine.value.event(.start(body: body, headers: headers))
        if case let .refuse(error) = first { throw error }
        driver.carryOut(first)
    }

    /// The state machine and what its actions need, kept alive by the completions in flight.
    /// The machine is bound to the request's loop, checked on every event (in process, without
    /// a loop, events come one at a time: each action waits for the previous one's completion).
    /// `@unchecked Sendable`: its one mutable field is that ``LoopBound`` value.
    final class Driver: @unchecked Sendable {
        @exclusivity(unchecked) var machine: LoopBound<RouteExchange>
        let exchange: TransformedExchange
        let send: Send
        let finish: @Sendable (HTTPResponse, Outcome) -> Void

        init(
            machine: LoopBound<RouteExchange>, exchange: TransformedExchange, send: @escaping Send,
            finish: @escaping @Sendable (HTTPResponse, Outcome) -> Void
        ) {
            self.machine = machine
            self.exchange = exchange
            self.send = send
            self.finish = finish
        }

        func handle(_ event: RouteExchange.Event) { carryOut(machine.value.event(event)) }

        func carryOut(_ action: RouteExchange.Action) {
            switch action {
            case .none, .refuse:
                return  // a refusal only comes from .start, which the caller throws
            case let .transform(selection, side):
                guard let vault = exchange.vault else { return }  // the plan said there is one
                let transformer =
                    side == .request
                    ? MessageTransformer(vault: vault, caller: exchange.requestCaller)
                    : MessageTransformer(vault: vault.answering, caller: exchange.responseCaller)
                transformer.run(selection) { [self] result in handle(.transformed(result)) }
            case let .checkAliases(values):
                guard let vault = exchange.vault else { return handle(.aliasesChecked(.success([]))) }
                // Existence only (nothing opened), at most maxSelected values (the machine's bound).
                vault.liveAliases(values) { [self] result in
                    switch result {
                    case let .success(found): handle(.aliasesChecked(.success(found)))
                    case let .failure(error): handle(.aliasesChecked(.failure(error.cloakError { _ in "request" })))
                    }
                }
            case let .send(body, headers):
                guard let files = exchange.files else {
                    return send(.bytes(body), headers) { [self] result, written in
                        handle(.answered(result, written: written))
                    }
                }
                reveal(files, body, headers)
            case let .finish(response, outcome):
                finish(response, outcome)
            }
        }

        /// Puts the selected files in the body, then sends it streamed; an alias that is not a
        /// file's, or a file that cannot be read, is answered instead (nothing is sent).
        private func reveal(_ files: FileRevealing, _ body: [UInt8], _ headers: [(name: String, value: String)]) {
            let plan: FileRevealing.Plan
            do {
                plan = try FileRevealing.plan(
                    body, contentType: headers.first { $0.name.caseInsensitiveEquals("Content-Type") }?.value,
                    operations: files.operations)
            } catch {
                return handle(.answered(.failure(error)))
            }
            guard !plan.aliases.isEmpty else {
                return send(.bytes(body), headers) { [self] result, written in
                    handle(.answered(result, written: written))
                }
            }
            files.resolve(plan) { [self] result in
                switch result {
                case .failure(let error):
                    handle(.answered(.failure(error)))
                case .success(let revealed):
                    var headers = headers
                    if let type = plan.contentType {
                        headers.removeAll { $0.name.caseInsensitiveEquals("Content-Type") }
                        headers.append(("Content-Type", type))
                    }
                    send(.stream(revealed.body, length: revealed.length), headers) {
                        [self] result, written in
                        handle(.answered(result, written: written))
                    }
                }
            }
        }
    }
}

extension LoopHandle {
    /// Sends `request` upstream and maps its failures as routes do: 502 1400 (unreachable),
    /// 502 1401 (unusable answer), 504 1408 (no answer in time), 400 1002 (a request that cannot
    /// be sent as it is).
    func call(_ request: UpstreamRequest, done: @escaping @Sendable (Result<HTTPResponse, CloakError>) -> Void) {
        send(request) { result in
            switch result {
            case let .success(response): done(.success(response))
            case let .failure(.unreachable(why)): done(.failure(CloakError(.unexpectedResponseType, why)))
            case let .failure(.badResponse(why)): done(.failure(CloakError(.unexpectedResponseDataFormat, why)))
            case let .failure(.invalidRequest(why)): done(.failure(CloakError(.malformedRequest, why)))
            case .failure(.timeout):
                done(
                    .failure(
                        CloakError(.upstreamTimeout, "the upstream did not answer within \(request.timeoutSeconds) s")))
            }
        }
    }
}
