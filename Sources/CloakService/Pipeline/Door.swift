import CloakCore
import CloakHTTP
import CloakVault
import Dispatch

/// Asks for one reading of the store's credentials because a request presented a bearer token
/// nobody knows (made on another node a moment ago); `then` runs once it is done. False when no
/// reading will happen (one began within the last second): the 401 stands.
typealias UnknownTokenReading = @Sendable (_ then: @escaping @Sendable () -> Void) -> Bool

/// Stores a request's audit entries that no vault change stored with it (``Outcome``); `done`
/// is called with nil once they are durable, or the error to answer instead (from any thread).
typealias AuditKeeping =
    @Sendable (_ entries: [AuditEvent.Draft], _ done: @escaping @Sendable (CloakError?) -> Void) -> Void

/// A listener's way from request to answer: its steps in order, then its handler, then the
/// steps again in reverse with the answer. Doors differ only in the steps they list
/// (``CloakService`` makes them: the API listener with the elements' assets, and the egress
/// forward-proxy door).
///
/// ```
/// request ─▶ step 1 ─▶ step 2 ─▶ … ─▶ handler ─┐   (a step may refuse or answer: the rest is skipped)
/// answer  ◀─ step 1 ◀─ step 2 ◀─ … ◀───────────┘   (every step sees every answer)
/// ```
///
/// `Steps` is one concrete type (``MiddlewareChain``), so the whole chain is specialized; the
/// door is made once and shared (its steps are never copied per request). The handler comes
/// with each request: it may refer to what owns the door.
final class Door<Steps: Middleware>: Sendable {
    let steps: Steps
    let unknownToken: UnknownTokenReading?
    /// Where audit entries are stored before their answer leaves (nil: only logged).
    let keepAudit: AuditKeeping?

    init(steps: Steps, unknownToken: UnknownTokenReading? = nil, keepAudit: AuditKeeping? = nil) {
        self.steps = steps
        self.unknownToken = unknownToken
        self.keepAudit = keepAudit
    }

    /// Answers `request` through `responder`, now or later (a server's ``HTTPDeferredHandler``
    /// with the handler bound).
    /// - Parameter retried: the request runs again after a credentials reading (once only).
    func handle<Handler: RequestHandler>(
        _ request: HTTPRequest, _ responder: HTTPResponder, _ handler: Handler, retried: Bool = false
    ) {
        var context = RequestContext(request, start: DispatchTime.now().uptimeNanoseconds)
        let reply: Reply
        do {
            reply = try run(&context, handler)
        } catch {
            // A token made on another node is refused here until this node reads the store: read
            // it once now (at most once a second for all such requests), then run the request
            // again, from the start, on its loop. A streamed body has begun to flow: not retried.
            if error.code == .invalidAccessToken, context.identity.unknownBearer, !retried,
                request.bodyStream == nil, let loop = request.loop, let unknownToken,
                unknownToken({ [self] in loop.execute { self.handle(request, responder, handler, retried: true) } })
            {
                return
            }
            context.error = error
            reply = .now(.error(error))
        }
        switch reply {
        case let .now(response):
            answer(response, context, responder)
        case let .failed(failure):
            context.error = failure.error
            answer(failure.response, context, responder)
        case let .later(work):
            work(
                Reply.Finish { [self, context] answer, error, route in
                    if error != nil || !route.isEmpty {  // the context is copied only to carry them
                        var answered = context
                        answered.error = error
                        answered.routeFacts = route
                        self.answer(answer, answered, responder)
                    } else {
                        self.answer(answer, context, responder)
                    }
                })
        }
    }

    /// Passes `response` back through the steps and sends it, once the request's audit entries
    /// are durable ("audit must succeed", as HashiCorp Vault's audit devices): those a vault
    /// change did not store with itself go with the vault's next commit first. When they cannot
    /// be stored the answer is withheld and a 1500 sent instead (with the store's `Retry-After`).
    private func answer(_ response: HTTPResponse, _ context: RequestContext, _ responder: HTTPResponder) {
        guard let keepAudit, let outcome = context.outcome else { return respond(response, context, responder) }
        let entries = outcome.takeUnstored()
        guard !entries.isEmpty else { return respond(response, context, responder) }
        let loop = context.request.loop
        keepAudit(entries) { [self] failure in
            let send: @Sendable () -> Void = {
                if let error = failure {
                    var failed = context
                    failed.error = error
                    return self.respond(.error(error), failed, responder)
                }
                self.respond(response, context, responder)
            }
            if let loop { loop.execute(send) } else { send() }
        }
    }

    private func respond(_ response: HTTPResponse, _ context: RequestContext, _ responder: HTTPResponder) {
        var response = response
        steps.response(&response, context)
        responder.respond(response)
    }

    /// A CONNECT on the forward-proxy door: the same steps as any request (identified, counted,
    /// rate-limited, logged), then `decide` opens a tunnel or refuses; a refusal passes the
    /// response phase like any answer, and an opened tunnel is logged as a 200.
    ///
    /// `decide` may note the error a refusal it returns is (``RequestContext/error``); a thrown
    /// one is noted here.
    func decide(
        _ request: HTTPRequest, _ decide: (inout RequestContext) throws(CloakError) -> TunnelDecision
    ) -> TunnelDecision {
        var context = RequestContext(request, start: DispatchTime.now().uptimeNanoseconds)
        var decision: TunnelDecision
        do throws(CloakError) {
            if let answer = try steps.request(&context) {
                decision = .refuse(answer)
            } else {
                decision = try decide(&context)
            }
        } catch {
            context.error = error
            decision = .refuse(.error(error))
        }
        switch decision {
        case var .refuse(response):
            steps.response(&response, context)
            return .refuse(response)
        case .open:
            var answered = HTTPResponse(status: 200)
            steps.response(&answered, context)
            return decision
        }
    }

    private func run<Handler: RequestHandler>(_ context: inout RequestContext, _ handler: Handler) throws(CloakError)
        -> Reply
    {
        if let answer = try steps.request(&context) { return .now(answer) }
        return try handler.reply(to: context)
    }
}
