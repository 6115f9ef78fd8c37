import CloakCore
import CloakHTTP
import Dispatch

/// A route's steps for one request (issue 49): the request's on the bytes about to be sent, the
/// answer's on what came back.
///
/// Steps that hold their thread — a private key's signature (an RSA-2048 one is about 0.7 ms),
/// a token's (as long as the token takes), an answer's RSA decryption — run on ``workers``,
/// and the request goes on on its loop; the others (digests, HMACs, JWE encryption to a public
/// key) run on the loop, where a hop would cost more than they do. Every continuation runs on
/// the request's loop, which is where the exchange's state lives.
struct RouteStepRun: Sendable {
    let route: Route
    let loop: LoopHandle
    let stepsRan: StepsRan?

    /// Threads for the steps that would hold a loop; concurrent, as many as GCD gives.
    static let workers = DispatchQueue(label: "cloak.route-steps", qos: .userInitiated, attributes: .concurrent)

    /// `request` rewritten by the route's request steps, and what they wrote over the body
    /// (``OutgoingMessage/written``), looked for in the answer; `next` runs on the loop.
    func prepare(
        _ request: UpstreamRequest,
        next: @escaping @Sendable (Result<(UpstreamRequest, StepWrites), CloakError>) -> Void
    ) {
        let steps = route.requestSteps
        guard !steps.isEmpty else { return next(.success((request, StepWrites()))) }
        guard steps.contains(where: \.holdsThread) else {
            let result = Self.run(steps, on: request, route: route)
            if case .success = result { stepsRan?.names = route.requestStepNames }
            return next(result)
        }
        let route = self.route, stepsRan = self.stepsRan
        let loop = self.loop
        Self.workers.async {
            let result = Self.run(steps, on: request, route: route)
            loop.execute {
                if case .success = result { stepsRan?.names = route.requestStepNames }
                next(result)
            }
        }
    }

    /// `request` rewritten by `steps` (configuration keeps them off routes that stream a body),
    /// and what they wrote over the body (``OutgoingMessage/written``).
    private static func run(_ steps: [Route.Step], on request: UpstreamRequest, route: Route)
        -> Result<(UpstreamRequest, StepWrites), CloakError>
    {
        var message = OutgoingMessage(
            method: request.method.rawValue, scheme: request.scheme, host: request.host, port: request.port,
            target: request.target, headers: request.headers, body: request.body)
        do throws(CloakError) {
            try Route.Step.apply(steps, to: &message, firstIndex: route.requestOperations.count)
        } catch {
            return .failure(error)
        }
        var sent = request
        sent.headers = message.headers
        sent.body = message.body
        return .success((sent, message.written))
    }

    /// The answer as the exchange gets it: opened by the answer's steps. `done` runs on the
    /// loop. (What the request's steps wrote is looked for in it by the exchange, with the
    /// revealed values: ``RevealedValues/add(bytes:)``.)
    func answer(
        _ result: Result<HTTPResponse, CloakError>, done: @escaping @Sendable (Result<HTTPResponse, CloakError>) -> Void
    ) {
        let steps = route.responseSteps
        guard !steps.isEmpty, case .success(let response) = result else { return done(result) }
        if RouteExchange.isEncoded(response) {
            return done(
                .failure(
                    RouteExchange.upstreamFailure(
                        response, "it is encoded (Content-Encoding), and this route opens answers")
                ))
        }
        let stepsRan = self.stepsRan
        let run: @Sendable () -> (Result<HTTPResponse, CloakError>, [String]) = {
            var opened = response
            do throws(CloakError) {
                let names = try Route.ResponseStep.apply(steps, to: &opened)
                return (.success(opened), names)
            } catch {
                // The provider answered: its status goes with the failure.
                return (.failure(RouteExchange.upstreamFailure(response, error.message)), [])
            }
        }
        let finish: @Sendable ((Result<HTTPResponse, CloakError>, [String])) -> Void = { outcome in
            for name in outcome.1 { stepsRan?.names += (stepsRan?.names.isEmpty ?? true ? "" : ",") + name }
            done(outcome.0)
        }
        // Only an answer that looks sealed costs a decryption; another one is passed on here.
        guard CompactJOSE.looksLikeJWE(response.body) else { return finish(run()) }
        let loop = self.loop
        Self.workers.async {
            let outcome = run()
            loop.execute { finish(outcome) }
        }
    }
}

/// The names of the steps a route ran on a request, for the lines written when it is answered.
/// Written and read on the request's loop only (a step on a worker hands its names back there),
/// one continuation after the other.
final class StepsRan: @unchecked Sendable {
    var names: String = ""
}
