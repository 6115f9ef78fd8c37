import CloakCore
import CloakHTTP
import CloakVault
import Dispatch

/// `POST /admin/routes/{id}/test` (scope `routes:test`): the route inspector over the API
/// (``RouteInspector``). The body is a ``RouteSample``; the answer is what the route would send,
/// which selectors took something, what it would refuse, and each step's headers. Throwaway
/// keys are made on a worker thread (an RSA key takes tens of milliseconds), never on the loop.
struct AdminRoutesHandler {
    let routes: [Route]
    let maxBatch: Int
    let outcome: Outcome?

    func test(_ request: HTTPRequest, id: String) throws(CloakError) -> Reply {
        guard let route = routes.first(where: { $0.id == id }) else { throw .notFound("no such route") }
        let sample = try RouteSample(json: try request.jsonBody())
        let inspector = RouteInspector(route: route, maxSelected: maxBatch)
        let (loop, outcome) = (request.loop, outcome)
        return .later { finish in
            RouteStepRun.workers.async {
                let report = inspector.inspect(sample)
                let answer: @Sendable () -> Void = {
                    outcome?.alias(
                        nil, report.refusal == nil ? .wouldSend : .wouldRefuse, facts: [("route", route.id)])
                    finish(.json(200, JSONWriter.encode(report.document), headers: HTTPResponse.noStoreHeaders))
                }
                if let loop { loop.execute(answer) } else { answer() }
            }
        }
    }
}
