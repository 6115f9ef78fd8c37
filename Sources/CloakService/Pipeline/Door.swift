import CloakCore
import CloakHTTP
import Dispatch

/// A listener's way from request to answer: its middleware in order, then its handler, then
/// the middleware again in reverse with the answer. Doors differ only in the steps they list
/// (``CloakService`` makes them: the API listener with the elements' assets, and the egress
/// forward-proxy door).
///
/// ```
/// request ─▶ step 1 ─▶ step 2 ─▶ … ─▶ handler ─┐   (a step may refuse or answer: the rest is skipped)
/// answer  ◀─ step 1 ◀─ step 2 ◀─ … ◀───────────┘   (every step sees every answer)
/// ```
struct Door: Sendable {
    let middleware: [any Middleware]
    let handler: any RequestHandler

    /// The ``HTTPDeferredHandler`` of a server: answers through `responder`, now or later.
    func handle(_ request: HTTPRequest, _ responder: HTTPResponder) {
        var context = RequestContext(request, start: DispatchTime.now().uptimeNanoseconds)
        let reply: Reply
        do {
            reply = try run(&context)
        } catch {
            reply = .now(.error(error))
        }
        switch reply {
        case let .now(response):
            responder.respond(finish(response, context))
        case let .later(work):
            work { [self, context] response in responder.respond(finish(response, context)) }
        }
    }

    private func run(_ context: inout RequestContext) throws(CloakError) -> Reply {
        for step in middleware {
            if let answer = try step.request(&context) { return .now(answer) }
        }
        return try handler.reply(to: context)
    }

    private func finish(_ response: HTTPResponse, _ context: RequestContext) -> HTTPResponse {
        var response = response
        for step in middleware.reversed() { step.response(&response, context) }
        return response
    }
}
