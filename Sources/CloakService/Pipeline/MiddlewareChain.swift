import CloakCore
import CloakHTTP

/// Two steps as one: `first`'s request phase, then `second`'s; on the way back `second`'s
/// response phase, then `first`'s. Nested, it makes a door's whole list one concrete type, so
/// the compiler specializes and inlines every step (a list of `any Middleware` would open an
/// existential and copy its box per step and phase: about 4k instructions a request).
struct MiddlewarePair<First: Middleware, Second: Middleware>: Middleware {
    let first: First
    let second: Second

    func request(_ context: inout RequestContext) throws(CloakError) -> HTTPResponse? {
        if let answer = try first.request(&context) { return answer }
        return try second.request(&context)
    }

    func response(_ response: inout HTTPResponse, _ context: RequestContext) {
        second.response(&response, context)
        first.response(&response, context)
    }
}

/// Writes a door's steps in order, one per line (as Hummingbird's `MiddlewareFixedTypeBuilder`):
///
/// ```swift
/// let steps = MiddlewareChain.build {
///     AccessLogMiddleware(log: log)
///     ViolationMiddleware()
/// }
/// ```
@resultBuilder
enum MiddlewareChain {
    static func buildPartialBlock<M: Middleware>(first: M) -> M { first }

    static func buildPartialBlock<A: Middleware, B: Middleware>(accumulated: A, next: B) -> MiddlewarePair<A, B> {
        MiddlewarePair(first: accumulated, second: next)
    }

    static func build<M: Middleware>(@MiddlewareChain _ steps: () -> M) -> M { steps() }
}
