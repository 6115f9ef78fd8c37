import CloakCore
import CloakCrypto
import CloakHTTP
import Foundation
import Synchronization
import Testing

@testable import CloakService

/// What the middleware tests share: requests, tokens, a recording step and handler, and ways to
/// run one step or a whole door. Pure values: no server, socket, vault or thread.
enum MiddlewareFixture {
    static let origin = "https://shop.example"

    static func secret(_ id: String) -> String { "secret-\(id)" }

    /// A configured token whose bearer text is `secret-<id>`.
    static func token(_ id: String, _ scopes: Set<Scope>) -> ServiceConfiguration.AccessToken {
        ServiceConfiguration.AccessToken(id: id, sha256: Digest.sha256(Array(secret(id).utf8)), scopes: scopes)
    }

    static let creator = token("creator", ["aliases:create", "aliases:reveal"])
    static let payer = token("payer", ["egress:psp"])
    static let revealer = token("revealer", ["aliases:reveal"])
    static let authenticator = Authenticator(tokens: [creator, payer, revealer])

    static func request(
        _ method: HTTPMethod, _ path: String, headers: [(name: String, value: String)] = [],
        address: String = "192.0.2.1"
    ) -> HTTPRequest {
        var request = HTTPRequest(method: method, path: path, headers: headers, requestID: "req-1")
        request.remoteAddress = address
        return request
    }

    /// A context for the request after the API listener's router saw it.
    static func routed(
        _ method: HTTPMethod, _ path: String, headers: [(name: String, value: String)] = [],
        address: String = "192.0.2.1"
    ) -> RequestContext {
        var context = RequestContext(request(method, path, headers: headers, address: address), start: 0)
        _ = try? RoutingMiddleware(router: CloakService.router).request(&context)
        return context
    }

    /// A context after the router and the rate limit let it through: labelled by its route.
    static func admitted(
        _ method: HTTPMethod, _ path: String, headers: [(name: String, value: String)] = [],
        address: String = "192.0.2.1"
    ) -> RequestContext {
        var context = routed(method, path, headers: headers, address: address)
        context.template = context.routeTemplate
        return context
    }

    /// Runs a step's request phase: the error it refused with, nil when it passed or answered.
    static func refusal(_ step: some Middleware, _ context: inout RequestContext) -> CloakError? {
        do {
            _ = try step.request(&context)
            return nil
        } catch {
            return error
        }
    }

    /// The answer of a door whose handler answers at once (or calls back before returning).
    static func answer<Steps, Handler>(_ door: BoundDoor<Steps, Handler>, _ request: HTTPRequest) throws -> HTTPResponse
    {
        let box = Mutex<HTTPResponse?>(nil)
        door.handle(request, .collecting { response in box.withLock { $0 = response } })
        let collected = box.withLock { $0 }
        return try #require(collected, "the door did not answer before returning")
    }

    static func header(_ response: HTTPResponse, _ name: String) -> String? {
        response.headers.first { $0.name.caseInsensitiveEquals(name) }?.value
    }

    static func headerValues(_ response: HTTPResponse, _ name: String) -> [String] {
        response.headers.filter { $0.name.caseInsensitiveEquals(name) }.map(\.value)
    }

    /// The `error` member of a VGSError body.
    static func errorBody(_ response: HTTPResponse) throws -> JSONValue {
        let json = try JSONParser().parse(response.body)
        return try #require(json["error"])
    }

    static func extra(_ error: CloakError, _ key: String) -> JSONValue? {
        error.extraInfo.first { $0.key == key }?.value
    }

    static func int(_ value: JSONValue?) -> Int? {
        if case let .number(text)? = value { return Int(text) }
        return nil
    }

    static func resolution(_ route: Router<Endpoint>.Resolution) -> String {
        switch route {
        case .found: return "found"
        case .methodNotAllowed: return "405"
        case .notFound: return "none"
        }
    }
}

/// The phases the recording steps and handler ran, in order.
final class PhaseTrail: Sendable {
    private let recorded = Mutex<[String]>([])
    func add(_ event: String) { recorded.withLock { $0.append(event) } }
    var events: [String] { recorded.withLock { $0 } }
}

/// A step that writes down each phase it runs (`A>` on the way in, `<A status template` on the
/// way back, and an `X-Step: A` header), and may name a template, answer or refuse.
/// A door with the handler it serves, as ``CloakService`` binds them per request.
struct BoundDoor<Steps: Middleware, Handler: RequestHandler> {
    let door: Door<Steps>
    let handler: Handler

    init(steps: Steps, handler: Handler) {
        door = Door(steps: steps)
        self.handler = handler
    }

    func handle(_ request: HTTPRequest, _ responder: HTTPResponder) { door.handle(request, responder, handler) }
}

struct RecordingStep: Middleware {
    let name: String
    let trail: PhaseTrail
    var template: String? = nil
    var answer: HTTPResponse? = nil
    var refusal: CloakError? = nil

    func request(_ context: inout RequestContext) throws(CloakError) -> HTTPResponse? {
        trail.add("\(name)>")
        if let template { context.template = template }
        if let refusal { throw refusal }
        return answer
    }

    func response(_ response: inout HTTPResponse, _ context: RequestContext) {
        trail.add("<\(name) \(response.status) \(context.template)")
        response.headers.append(("X-Step", name))
    }
}

/// A handler that writes down that it ran (with the template it was given) and answers 200, now
/// or through `.later`, or refuses.
struct RecordingHandler: RequestHandler {
    let trail: PhaseTrail
    var refusal: CloakError? = nil
    var later = false

    func reply(to context: RequestContext) throws(CloakError) -> Reply {
        trail.add("handler \(context.template)")
        if let refusal { throw refusal }
        let response = HTTPResponse(status: 200, body: Array("ok".utf8))
        if later { return .later { finish in finish(response) } }
        return .now(response)
    }
}

@Suite struct DoorTests {
    typealias F = MiddlewareFixture

    func steps(
        _ trail: PhaseTrail, answeringAt answerer: String? = nil, refusingAt refuser: String? = nil,
        with error: CloakError = CloakError(.forbidden, "no entry")
    ) -> some Middleware {
        let step = { (name: String) in
            RecordingStep(
                name: name, trail: trail,
                answer: name == answerer ? HTTPResponse(status: 204) : nil,
                refusal: name == refuser ? error : nil)
        }
        return MiddlewareChain.build {
            step("A")
            step("B")
            step("C")
        }
    }

    @Test func requestPhasesRunInOrderThenTheHandlerThenEveryResponsePhaseInReverse() throws {
        let trail = PhaseTrail()
        let middleware = MiddlewareChain.build {
            RecordingStep(name: "A", trail: trail, template: "/t/{x}")
            RecordingStep(name: "B", trail: trail)
            RecordingStep(name: "C", trail: trail)
        }
        let door = BoundDoor(steps: middleware, handler: RecordingHandler(trail: trail))
        let response = try F.answer(door, F.request(.GET, "/t/1"))
        // What a step learned on the way in is seen by the steps after it, the handler, and
        // every response phase.
        #expect(
            trail.events == ["A>", "B>", "C>", "handler /t/{x}", "<C 200 /t/{x}", "<B 200 /t/{x}", "<A 200 /t/{x}"])
        #expect(response.status == 200)
        #expect(response.body == Array("ok".utf8))
        #expect(F.headerValues(response, "X-Step") == ["C", "B", "A"])
    }

    @Test func aStepThatAnswersSkipsTheLaterStepsAndTheHandlerButEveryStepSeesTheAnswer() throws {
        let trail = PhaseTrail()
        let door = BoundDoor(steps: steps(trail, answeringAt: "B"), handler: RecordingHandler(trail: trail))
        let response = try F.answer(door, F.request(.GET, "/x"))
        #expect(trail.events == ["A>", "B>", "<C 204 -", "<B 204 -", "<A 204 -"])
        #expect(response.status == 204)
        #expect(F.headerValues(response, "X-Step") == ["C", "B", "A"])
    }

    @Test func aRefusalSkipsTheRestAndIsAnsweredAsAVGSErrorThroughEveryResponsePhase() throws {
        let trail = PhaseTrail()
        let door = BoundDoor(steps: steps(trail, refusingAt: "A"), handler: RecordingHandler(trail: trail))
        let response = try F.answer(door, F.request(.GET, "/x"))
        #expect(trail.events == ["A>", "<C 403 -", "<B 403 -", "<A 403 -"])
        #expect(response.status == 403)
        #expect(F.header(response, "Content-Type") == "application/json")
        #expect(F.headerValues(response, "X-Step") == ["C", "B", "A"])
        let error = try F.errorBody(response)
        #expect(error["domain"]?.stringValue == "vgscollect.sdk")
        #expect(error["code"] == JSONValue.int(1301))
        #expect(error["type"]?.stringValue == "forbidden")
        #expect(error["description"]?.stringValue == "no entry")
    }

    @Test func aHandlersRefusalPassesEveryResponsePhase() throws {
        let trail = PhaseTrail()
        let handler = RecordingHandler(trail: trail, refusal: CloakError.notFound("nothing here"))
        let response = try F.answer(BoundDoor(steps: steps(trail), handler: handler), F.request(.GET, "/x"))
        #expect(trail.events == ["A>", "B>", "C>", "handler -", "<C 404 -", "<B 404 -", "<A 404 -"])
        #expect(response.status == 404)
        let error = try F.errorBody(response)
        #expect(error["code"] == JSONValue.int(1404))
    }

    @Test func aRefusedRateIsAnsweredWithRetryAfter() throws {
        let trail = PhaseTrail()
        let slow = CloakError(.tooManyRequests, "slow down", extraInfo: [("retryAfterSeconds", .int(7))])
        let door = BoundDoor(steps: steps(trail, refusingAt: "C", with: slow), handler: RecordingHandler(trail: trail))
        let response = try F.answer(door, F.request(.GET, "/x"))
        #expect(trail.events == ["A>", "B>", "C>", "<C 429 -", "<B 429 -", "<A 429 -"])
        #expect(response.status == 429)
        #expect(F.header(response, "Retry-After") == "7")
        let error = try F.errorBody(response)
        #expect(error["code"] == JSONValue.int(1429))
        #expect(error["extraInfo"]?["retryAfterSeconds"] == JSONValue.int(7))
    }

    @Test func aLaterReplyStillPassesEveryResponsePhase() throws {
        let trail = PhaseTrail()
        let door = BoundDoor(steps: steps(trail), handler: RecordingHandler(trail: trail, later: true))
        let response = try F.answer(door, F.request(.GET, "/x"))
        #expect(trail.events == ["A>", "B>", "C>", "handler -", "<C 200 -", "<B 200 -", "<A 200 -"])
        #expect(response.status == 200)
        #expect(F.headerValues(response, "X-Step") == ["C", "B", "A"])
    }

    @Test func aViolationIsRefusedBeforeTheHandlerAndStillGetsItsCORSHeaders() throws {
        let trail = PhaseTrail()
        let door = BoundDoor(
            steps: MiddlewareChain.build {
                RecordingStep(name: "A", trail: trail)
                ViolationMiddleware()
                CORSMiddleware(allowedOrigins: [F.origin])
                RecordingStep(name: "C", trail: trail)
            }, handler: RecordingHandler(trail: trail))
        var request = F.request(.POST, "/tokens", headers: [("Origin", F.origin)])
        request.violation = .bodyTooLarge(limit: 1024)
        let response = try F.answer(door, request)
        #expect(trail.events == ["A>", "<C 413 -", "<A 413 -"])
        #expect(response.status == 413)
        #expect(F.header(response, "Access-Control-Allow-Origin") == F.origin)
        let error = try F.errorBody(response)
        #expect(error["code"] == JSONValue.int(1003))
        #expect(error["extraInfo"]?["maxBodyBytes"] == JSONValue.int(1024))
    }
}

/// The HTTP status of every VGSError code (SPEC §6).
@Suite struct ErrorStatusTests {
    typealias F = MiddlewareFixture

    static let statuses: [(CloakError.Code, Int)] = [
        (.inputDataIsNotValid, 422), (.aliasNotFound, 422),
        (.malformedRequest, 400), (.invalidConfigurationURL, 400),
        (.payloadTooLarge, 413),
        (.invalidAccessToken, 401),
        (.forbidden, 403),
        (.unexpectedResponseType, 502), (.unexpectedResponseDataFormat, 502),
        (.notFound, 404),
        (.methodNotAllowed, 405),
        (.upstreamTimeout, 504),
        (.tooManyRequests, 429),
        (.vaultUnavailable, 503), (.tooManyConnections, 503),
        (.insufficientStorage, 507),
    ]

    @Test(arguments: statuses)
    func eachCodeIsAnsweredWithItsStatus(code: CloakError.Code, status: Int) throws {
        #expect(code.httpStatus == status)
        let response = HTTPResponse.error(CloakError(code, "why"))
        #expect(response.status == status)
        let error = try F.errorBody(response)
        #expect(error["code"] == JSONValue.int(code.rawValue))
        #expect(error["type"]?.stringValue == code.typeName)
    }

    @Test func theTableNamesEveryCodeOnce() {
        #expect(Self.statuses.count == CloakError.Code.allCases.count)
        #expect(Set(Self.statuses.map { $0.0 }) == Set(CloakError.Code.allCases))
    }
}

/// Requests the server marked before routing are refused, each with its code.
@Suite struct ViolationMiddlewareTests {
    typealias F = MiddlewareFixture

    struct Example: Sendable {
        let violation: HTTPViolation
        let code: CloakError.Code
        let status: Int
        let words: String
        let maxBodyBytes: Int?
    }

    static let examples: [Example] = [
        Example(
            violation: .bodyTooLarge(limit: 1024), code: .payloadTooLarge, status: 413,
            words: "the body is larger than 1024 bytes", maxBodyBytes: 1024),
        Example(
            violation: .conflictingContentLength, code: .malformedRequest, status: 400,
            words: "conflicting Content-Length headers", maxBodyBytes: nil),
        Example(
            violation: .invalidHeaderName, code: .malformedRequest, status: 400,
            words: "a header name is not a token", maxBodyBytes: nil),
        Example(
            violation: .malformedFraming(reason: "bare LF"), code: .malformedRequest, status: 400,
            words: "strict HTTP/1.1 framing (bare LF)", maxBodyBytes: nil),
    ]

    @Test(arguments: examples)
    func eachViolationIsRefusedWithItsCode(example: Example) throws {
        var request = F.request(.POST, "/tokens")
        request.violation = example.violation
        var context = RequestContext(request, start: 0)
        let refused = F.refusal(ViolationMiddleware(), &context)
        let error = try #require(refused)
        #expect(error.code == example.code)
        #expect(error.code.httpStatus == example.status)
        #expect(error.message.contains(example.words), "\(error.message)")
        if let limit = example.maxBodyBytes {
            #expect(error.code.rawValue == 1003)
            #expect(error.extraInfo.count == 1)
            #expect(F.extra(error, "maxBodyBytes") == JSONValue.int(limit))
        } else {
            #expect(error.code.rawValue == 1002)
            #expect(error.extraInfo.isEmpty)
        }
    }

    @Test func aRequestWithoutAViolationPasses() throws {
        var context = RequestContext(F.request(.POST, "/tokens"), start: 0)
        let answer = try ViolationMiddleware().request(&context)
        #expect(answer?.status == nil)
        #expect(context.template == "-")
    }
}
