import CloakCore
import CloakHTTP
import CloakVault
import Synchronization
import Testing

@testable import CloakService

/// The error an answer is travels in the request context (issue 44, item 9): every way Cloak
/// answers with its own error (a step's refusal, a handler's throw, `.failed`, `finish(.error)`,
/// a route's exchange) reaches the response phase as ``RequestContext/error``; an answer that is
/// not Cloak's, whatever its body holds, carries none.
@Suite struct RequestErrorTests {
    typealias F = MiddlewareFixture

    /// A step that writes down, on the way back, the code of the context's error (or `-`).
    struct ErrorWitness: Middleware {
        let seen: Seen

        func response(_ response: inout HTTPResponse, _ context: RequestContext) {
            seen.add(context.error.map { String($0.code.rawValue) } ?? "-")
        }
    }

    final class Seen: Sendable {
        private let codes = Mutex<[String]>([])
        func add(_ code: String) { codes.withLock { $0.append(code) } }
        var all: [String] { codes.withLock { $0 } }
    }

    /// A handler that replies with what `make` makes.
    struct Replying: RequestHandler {
        let make: @Sendable () throws(CloakError) -> Reply
        func reply(to context: RequestContext) throws(CloakError) -> Reply { try make() }
    }

    /// A body an upstream may send: a VGSError's first bytes, from someone else.
    static let lookalike = HTTPResponse.json(
        502, Array(#"{"error":{"domain":"vgscollect.sdk","code":1500,"type":"vaultUnavailable"}}"#.utf8))

    static func answer(_ handler: Replying, refusing: CloakError? = nil) throws -> (HTTPResponse, [String]) {
        let seen = Seen()
        let trail = PhaseTrail()
        let steps = MiddlewareChain.build {
            ErrorWitness(seen: seen)
            RecordingStep(name: "A", trail: trail, refusal: refusing)
        }
        let response = try F.answer(BoundDoor(steps: steps, handler: handler), F.request(.GET, "/x"))
        return (response, seen.all)
    }

    @Test func aStepsRefusalAndAHandlersThrowAreTheContextsError() throws {
        let never = Replying { .now(HTTPResponse(status: 200)) }
        #expect(try Self.answer(never, refusing: CloakError(.forbidden, "no")).1 == ["1301"])
        let throwing = Replying { () throws(CloakError) -> Reply in throw .notFound("none") }
        #expect(try Self.answer(throwing).1 == ["1404"])
    }

    @Test func aFailureAnsweredNowKeepsItsHeadersAndIsTheContextsError() throws {
        let failed = Replying {
            .failed(.error(CloakError(.methodNotAllowed, "GET is not allowed"), headers: [("Allow", "POST")]))
        }
        let (response, seen) = try Self.answer(failed)
        #expect(seen == ["1405"])
        #expect(response.status == 405 && F.header(response, "Allow") == "POST")
    }

    @Test func laterAnswersSayWhetherTheyAreCloaksErrors() throws {
        let error = Replying { .later { finish in finish(.error(.notFound("no such alias"))) } }
        let (failed, seenFailed) = try Self.answer(error)
        #expect(seenFailed == ["1404"] && failed.status == 404)
        // An upstream's answer, however much it looks like Cloak's error, is not one.
        let passed = Replying { .later { finish in finish(Self.lookalike) } }
        let (response, seenPassed) = try Self.answer(passed)
        #expect(seenPassed == ["-"] && response.status == 502)
        // A route's exchange says which its answer is.
        let routed = Replying {
            .later { finish in
                let error = CloakError(.unexpectedResponseDataFormat, "the upstream answered 200, but its answer: …")
                finish(HTTPResponse.error(error), error: error)
            }
        }
        #expect(try Self.answer(routed).1 == ["1401"])
        let ok = Replying { .now(HTTPResponse(status: 204)) }
        #expect(try Self.answer(ok).1 == ["-"])
    }
}

/// Issue 57 item 9: a store's failure reaches the client as its kind, never the driver's words.
@Suite struct StoreErrorTextTests {
    @Test func aStoreFailureNeverCarriesTheDriversText() {
        let driver = "insert record: FATAL:  terminating connection due to administrator command (SQLSTATE 57P01)"
        for failure in [StoreError.unavailable(driver), .transient("deadlock detected (SQLSTATE 40P01)")] {
            let error = VaultError.unavailable(failure.description).cloakError { _ in "data" }
            #expect(error.code == .vaultUnavailable)
            #expect(!error.message.contains("FATAL") && !error.message.contains("SQLSTATE"), "\(error.message)")
            #expect(error.message.contains("the store"), "\(error.message)")
        }
        // The vault's own reasons are its words, and stay.
        let own = VaultError.unavailable("an alias row failed its integrity check").cloakError { _ in "data" }
        #expect(own.message.contains("integrity check"))
    }
}
