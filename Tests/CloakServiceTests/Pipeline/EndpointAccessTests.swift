import CloakCore
import CloakCrypto
import CloakHTTP
import Foundation
import Testing

@testable import CloakService

/// Deny by default, generated from the declarations: every endpoint of ``Endpoint/api`` refuses,
/// through the whole API door, every caller its access does not admit, before its handler runs
/// (the service here has no vault: a handler that ran would answer 1500, never 401/403/407). A
/// new endpoint is tested by being declared.
@Suite struct EndpointAccessTests {
    typealias F = MiddlewareFixture

    /// Every fixed scope, and one egress route's.
    static let allScopes = Set(Scope.known).subtracting([.egressAll]).union([.egress("psp")])

    /// One token per scope holding every other scope (`lacks-<scope>`), and one holding nothing.
    static let service: CloakService = {
        var tokens = allScopes.map { F.token("lacks-\($0)", allScopes.subtracting([$0])) }
        tokens.append(F.token("nothing", []))
        var configuration = ServiceConfiguration(auth: tokens)
        configuration.openTokenize = false
        configuration.limits.token = RateLimit(requestsPerMinute: 100_000, burst: 100_000)
        configuration.limits.anonymous = RateLimit(requestsPerMinute: 100_000, burst: 100_000)
        return CloakService(configuration: configuration, logSink: { _ in })
    }()

    /// The endpoints that anyone may call, by name: opening another is a decision made here.
    /// `elements-bins`: the frames and apps compute field states on their own, and a state's
    /// attributes come from the bin it already shows (6 or 8 digits), admitted as the schema is.
    static let openByDesign: Set<String> = [
        "healthz", "readyz", "metrics", "validate", "elements-schema", "elements-asset", "elements-bins",
    ]

    /// A path the endpoint's first template matches.
    static func path(_ endpoint: Endpoint) -> String {
        var path = endpoint.templates.last!
        for (parameter, value) in [
            ("{form}", "checkout"), ("{alias}", "tok_sandbox_x"), ("{route}", "psp"), ("{path...}", "v1/charges"),
            ("{asset}", "cloak.js"), ("{bin}", "411111"), ("{digits}", "411111"),
        ] {
            path = path.replacingOccurrences(of: parameter, with: value)
        }
        return path
    }

    static func call(_ endpoint: Endpoint, token: String?) -> (status: Int, code: Int?) {
        var headers: [(name: String, value: String)] = [("Content-Type", "application/json")]
        if let token {
            let header = endpoint.credentials == .proxyAuthorization ? "Proxy-Authorization" : "Authorization"
            headers.append((header, "Bearer " + F.secret(token)))
        }
        var request = F.request(endpoint.methods[0], path(endpoint), headers: headers)
        request.body = Array(#"{"data":[]}"#.utf8)
        let response = service.handle(request)
        let code = (try? JSONParser().parse(response.body))?["error"]?["code"].flatMap { value -> Int? in
            if case let .number(text) = value { return Int(text) }
            return nil
        }
        return (response.status, code)
    }

    @Test(arguments: Endpoint.api.map(\.name))
    func anEndpointRefusesEveryCallerItsAccessDoesNotAdmit(name: String) throws {
        let endpoint = try #require(Endpoint.api.first { $0.name == name })
        switch endpoint.access {
        case .open:
            #expect(Self.openByDesign.contains(name), "\(name) is open: add it to openByDesign if that is meant")
            let answer = Self.call(endpoint, token: nil)
            #expect(![401, 403, 407].contains(answer.status))
        case let .scope(scope):
            #expect(Self.call(endpoint, token: nil) == (401, 1300))
            #expect(Self.call(endpoint, token: "lacks-\(scope)") == (403, 1301))
            #expect(Self.call(endpoint, token: "nothing") == (403, 1301))
            // Every other scope admits nothing more; the scope itself gets past the step.
            #expect(Self.call(endpoint, token: "lacks-aliases:create").status != 403 || scope == "aliases:create")
        case let .anyScope(scopes):
            #expect(Self.call(endpoint, token: nil) == (401, 1300))
            #expect(Self.call(endpoint, token: "nothing") == (403, 1301))
            // Each of the scopes gets past the step.
            for scope in scopes {
                #expect(Self.call(endpoint, token: "lacks-\(scope)").status != 403)
            }
        case .tokenize:
            // With auth.open_tokenize off, as here.
            #expect(Self.call(endpoint, token: nil) == (401, 1300))
            #expect(Self.call(endpoint, token: "lacks-aliases:create") == (403, 1301))
        case .egressRoute:
            #expect(Self.call(endpoint, token: nil).status == 407)
            #expect(Self.call(endpoint, token: "lacks-egress:psp") == (403, 1301))
        case .session:
            // No session, whatever the token: never an answer.
            for token in [nil, "nothing", "lacks-egress:psp"] {
                let answer = Self.call(endpoint, token: token)
                #expect((400..<500).contains(answer.status), "\(answer)")
            }
        }
    }

    @Test func everyMethodAndTemplateIsRoutedToItsDeclaration() {
        for endpoint in Endpoint.api {
            for template in endpoint.templates {
                for method in endpoint.methods {
                    var path = template
                    for p in ["{form}", "{alias}", "{route}", "{path...}", "{asset}"] {
                        path = path.replacingOccurrences(of: p, with: "x")
                    }
                    let context = F.routed(method, path)
                    #expect(context.endpoint === endpoint, "\(method) \(template)")
                }
            }
        }
    }

    @Test func namesAreUnique() {
        #expect(Set(Endpoint.api.map(\.name)).count == Endpoint.api.count)
    }
}
