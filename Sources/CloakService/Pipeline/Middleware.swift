import CloakCore
import CloakHTTP

/// One step every request of a door passes, in the door's order, before its handler; and on
/// the way back, in reverse order, for every answer (handlers', other steps' refusals, errors).
///
/// A step may refuse (throw: the door answers the error as a VGSError body), answer itself
/// (return a response: the handler is not called), or pass (return nil). Steps are small values
/// with no I/O of their own, so each is tested as a table without a server.
protocol Middleware: Sendable {
    /// Before the handler. Runs until one step refuses or answers.
    func request(_ context: inout RequestContext) throws(CloakError) -> HTTPResponse?
    /// After: every step's, whether or not its `request` ran (a refusal is still counted,
    /// logged and given its CORS headers).
    func response(_ response: inout HTTPResponse, _ context: RequestContext)
}

extension Middleware {
    func request(_ context: inout RequestContext) throws(CloakError) -> HTTPResponse? { nil }
    func response(_ response: inout HTTPResponse, _ context: RequestContext) {}
}

/// What answers a request once a door's middleware let it through: now, or later (exactly
/// once) from any thread.
protocol RequestHandler: Sendable {
    func reply(to context: RequestContext) throws(CloakError) -> Reply
}
