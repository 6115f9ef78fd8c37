import Foundation
import Testing

@testable import CloakHTTP

@Suite struct RouterTests {
    static func router() -> Router<String> {
        var r = Router<String>()
        r.add(.GET, "/healthz", "health")
        r.add(.POST, "/forms/{form}/validate", "validate")
        r.add(.GET, "/aliases/{alias}", "reveal")
        r.add(.DELETE, "/aliases/{alias}", "delete")
        r.add(.POST, "/proxy/{path...}", "proxy")
        return r
    }

    @Test func parametersAreCaptured() {
        guard
            case let .found(h, params, template) = Self.router().resolve(
                method: .POST, path: "/forms/checkout/validate")
        else { Issue.record("not found"); return }
        #expect(h == "validate")
        #expect(params == ["form": "checkout"])
        #expect(template == "/forms/{form}/validate")
    }

    @Test func remainderCapturesTheRestOfThePath() {
        guard case let .found(_, params, _) = Self.router().resolve(method: .POST, path: "/proxy/post/x/y") else {
            Issue.record("not found"); return
        }
        #expect(params["path"] == "post/x/y")
        guard case .notFound = Self.router().resolve(method: .POST, path: "/proxy") else {
            Issue.record("an empty remainder must not match"); return
        }
    }

    @Test(arguments: [
        ("/proxy/a/b", "a/b"), ("/proxy//a//b/", "a/b"), ("/proxy/a/b//", "a/b"), ("/proxy/a", "a"),
        ("/proxy/a//", "a"), ("/proxy/%2F/x", "%2F/x"),
    ])
    func theRemainderHasNoEmptySegments(path: String, rest: String) {
        guard case let .found(_, params, _) = Self.router().resolve(method: .POST, path: path) else {
            Issue.record("not found"); return
        }
        #expect(params["path"] == rest)
    }

    /// A parameter branch that fails leaves nothing behind: the catch-all's answer holds its
    /// own parameter only.
    @Test func aFailedParameterBranchIsUndone() {
        var r = Router<String>()
        r.add(.GET, "/a/{x}/b", "b")
        r.add(.GET, "/a/{rest...}", "rest")
        guard case let .found(h, params, _) = r.resolve(method: .GET, path: "/a/1/c") else {
            Issue.record("not found"); return
        }
        #expect(h == "rest")
        #expect(params == ["rest": "1/c"])
        guard case let .found(h2, params2, _) = r.resolve(method: .GET, path: "/a/1/b") else {
            Issue.record("not found"); return
        }
        #expect(h2 == "b")
        #expect(params2 == ["x": "1"])
    }

    @Test func knownPathWithOtherMethodIsMethodNotAllowedWithTheAllowedList() {
        guard case let .methodNotAllowed(allowed, _) = Self.router().resolve(method: .PUT, path: "/aliases/tok_1")
        else {
            Issue.record("expected 405"); return
        }
        #expect(allowed == [.GET, .HEAD, .DELETE])
    }

    @Test func headIsServedByGet() {
        guard case let .found(h, _, _) = Self.router().resolve(method: .HEAD, path: "/healthz") else {
            Issue.record("not found"); return
        }
        #expect(h == "health")
    }

    @Test(arguments: ["/", "/forms", "/forms/checkout", "/forms/checkout/validate/extra", "/healthz/x", "/HEALTHZ"])
    func unknownPathsAreNotFound(path: String) {
        guard case .notFound = Self.router().resolve(method: .GET, path: path) else {
            Issue.record("\(path) should not match"); return
        }
    }

    @Test func repeatedSlashesAreIgnored() {
        guard case .found = Self.router().resolve(method: .GET, path: "//healthz/") else {
            Issue.record("not found"); return
        }
    }

    @Test(arguments: [
        "plain", "a%2Fb", "a%2fb", "%41%42", "caf%C3%A9", "%", "%4", "%G1", "a%zz", "%FF", "%C3", "%00", "100%25",
        "%2C%20",
    ])
    func parametersDecodeAsFoundationWould(segment: String) {
        var bytes = segment
        #expect(bytes.withUTF8 { Router<String>.percentDecoded($0) } == segment.removingPercentEncoding)
    }
}
