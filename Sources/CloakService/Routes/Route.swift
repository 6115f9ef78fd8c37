import CloakCore
import CloakHTTP

/// One configured route, inbound (`routes[]`, reached under `/proxy`) or egress
/// (`egress.routes[]`, reached through the transform door or the forward-proxy door):
///
/// - which requests it takes (``Matcher`` and `methods`);
/// - where it sends them (``Upstream``, with how Cloak trusts it), or back to the caller (echo);
/// - what it does to the request on the way out and to the answer on the way back (an inbound
///   route's `form`, or request and response ``Operation``s);
/// - who may use it (``scope``, and the scopes its operations need).
///
/// Both doors run every route through one ``RouteCall``.
package struct Route: Sendable {
    /// Which door the route belongs to: it decides how a token is checked and which headers
    /// go upstream, never how the exchange runs.
    package enum Door: Sendable, Equatable {
        /// `routes[]`: the client is the caller (a browser or an app); Cloak redacts.
        case inbound
        /// `egress.routes[]`: the caller is a backend with a token `egress:<id>`; Cloak reveals.
        case egress
    }

    /// Which requests a route takes.
    package enum Matcher: Sendable {
        /// `/proxy` + the route's path (no trailing slash), and every path under it.
        case prefix(String)
        /// Paths (as sent, percent-encoded) matching one of the globs, on the upstream's host.
        case paths([PathGlob])
    }

    /// Where a route sends requests, and how Cloak trusts (and is trusted by) it.
    package struct Upstream: Sendable {
        package var scheme: UpstreamRequest.Scheme
        /// Lowercased on egress routes (the forward door compares it with a CONNECT's host).
        package var host: String
        package var port: Int
        /// Prefixed to what follows the route's own path.
        package var path: String
        /// PEM file of CAs trusted for an https upstream; nil: the system store.
        package var caFile: String?
        /// PEM files of Cloak's certificate and key for mutual TLS.
        package var clientCertificate: UpstreamRequest.ClientCertificate?
        /// Whether the upstream may be (or resolve to) loopback, private or link-local.
        package var allowPrivate = false
        package var connectTimeoutSeconds: Double = 5
        package var responseTimeoutSeconds: Double = 30
        /// Whether a connection may carry later requests (`reuse`, default true). An upstream
        /// that may send bytes nobody asked for is given `reuse: false`: HTTP/1.1 cannot tell
        /// them from the next request's answer (docs/threat-model.md, "Upstream connections").
        package var reuse = true
        /// The trust files' contents as read with this configuration (``UpstreamRequest/trustStamp``).
        package var trustStamp = 0
    }

    /// One operation of a route on a message: `redact` aliases the values its selectors pick (in
    /// `format` and `storage`); `reveal` puts back the values of the aliases they pick.
    package struct Operation: Sendable {
        package enum Action: String, Sendable { case redact, reveal }
        package var action: Action = .redact
        package var format: AliasFormatName
        package var storage: TokenizationSettings.Storage
        package var json: [JSONPath]
        package var form: [String]
        package var header: [String]
        /// A reveal of files (issue 47): the multipart parts whose alias becomes the file part.
        package var multipart: [String] = []
        /// A reveal of files into JSON: how the content goes in place of the alias.
        package var encoding: FileEncoding?
        /// The selectors (as configured: a JSON path, a form key, a header name) that must each
        /// take a value of every message the operation reads (`required: true`).
        package var required: [String] = []

        package enum FileEncoding: String, Sendable { case base64 }

        /// Whether the operation puts files, not values, in place of aliases (``FileRevealing``).
        var revealsFiles: Bool { !multipart.isEmpty || encoding != nil }
    }

    /// What a route is, in one box every copy shares: a request copies its route into the
    /// call, its closures and the exchange (five copies a request), and a copy of the box is one
    /// retain where a copy of the fields was one for each text and array in them (45 a request).
    /// A route is made whole by its initializer and never changes.
    private struct Fields: Sendable {
        var id: String
        var door: Door
        var matcher: Matcher
        var methods: [String]
        var upstream: Upstream?
        var form: String?
        var requestOperations: [Operation]
        var requestSteps: [Step]
        var responseOperations: [Operation]
        var responseSteps: [ResponseStep]
        var headers: [(name: String, value: String)]
        var forwardAuthorization: Bool
        var forwardBaggage: Bool
        var maxAliases: Int
        var stepNames: String
        var requestStepNames: String
        var unselectedCards: UnselectedCards
    }

    private final class Box: Sendable {
        let fields: Fields
        init(_ fields: Fields) { self.fields = fields }
    }

    private let box: Box

    package init(
        id: String, door: Door, matcher: Matcher, methods: [String], upstream: Upstream?, form: String? = nil,
        requestOperations: [Operation] = [], responseOperations: [Operation] = [],
        headers: [(name: String, value: String)] = [], forwardAuthorization: Bool = false,
        forwardBaggage: Bool = false, maxAliases: Int = .max, requestSteps: [Step] = [],
        responseSteps: [ResponseStep] = [], unselectedCards: UnselectedCards = .refuse
    ) {
        box = Box(
            Fields(
                id: id, door: door, matcher: matcher, methods: methods, upstream: upstream, form: form,
                requestOperations: requestOperations, requestSteps: requestSteps,
                responseOperations: responseOperations, responseSteps: responseSteps, headers: headers,
                forwardAuthorization: forwardAuthorization, forwardBaggage: forwardBaggage, maxAliases: maxAliases,
                stepNames: (requestSteps.map(\.name) + responseSteps.map(\.name)).joined(separator: ","),
                requestStepNames: requestSteps.map(\.name).joined(separator: ","), unselectedCards: unselectedCards))
    }

    /// `routes[].unselected_cards`: what an inbound route does with a card number (``CardScan``)
    /// that is still in the request it is about to forward, where no selector took it (a typo, a
    /// field nobody named): `refuse` (the default) answers 422 naming the route and the place;
    /// `redact` aliases it (FPE_T_FOUR, PERSISTENT); `allow` forwards it. A card-shaped value the
    /// route itself wrote (an alias, a revealed value) or that is one of the vault's aliases is
    /// not a card. Egress routes carry the backend's own requests and do not look.
    package enum UnselectedCards: String, Sendable { case refuse, redact, allow }

    package var unselectedCards: UnselectedCards { box.fields.unselectedCards }

    /// A UUID for inbound routes (`X-Route-Id` names one), `[a-z0-9_-]+` for egress routes.
    package var id: String { box.fields.id }
    package var door: Door { box.fields.door }
    package var matcher: Matcher { box.fields.matcher }
    package var methods: [String] { box.fields.methods }
    /// nil: `upstream: echo` (inbound only): the caller gets the body the upstream would have.
    package var upstream: Upstream? { box.fields.upstream }
    /// An inbound route's form: validated, aliased and mapped before the body goes upstream.
    package var form: String? { box.fields.form }
    package var requestOperations: [Operation] { box.fields.requestOperations }
    /// What runs on the request after its operations, in order, right before it is sent (issue 49).
    package var requestSteps: [Step] { box.fields.requestSteps }
    /// The request's and the answer's step names, comma-separated (the logs' and the span's
    /// `steps`); empty when the route has none.
    package var stepNames: String { box.fields.stepNames }
    /// The request's step names alone, comma-separated.
    var requestStepNames: String { box.fields.requestStepNames }

    package var responseOperations: [Operation] { box.fields.responseOperations }
    /// What runs on the answer as it came, before its operations (issue 49: `jwe_decrypt`).
    package var responseSteps: [ResponseStep] { box.fields.responseSteps }
    /// Headers set on every request upstream (replacing the client's of that name).
    package var headers: [(name: String, value: String)] { box.fields.headers }
    /// Whether the client's `Authorization` goes upstream. Egress routes always forward it (the
    /// provider's key); inbound ones when configured. A Cloak token never does.
    package var forwardAuthorization: Bool { box.fields.forwardAuthorization }
    /// Whether a trusted caller's W3C `baggage` goes upstream as it came (`forward_baggage`,
    /// default false): baggage is the caller's word (a tenant, a flag) that an upstream may act
    /// on, so it passes only where a route asks for it, and only from a caller whose trace
    /// context is taken (`telemetry.traces.trust_incoming_context`).
    package var forwardBaggage: Bool { box.fields.forwardBaggage }
    /// More selected values in one message: 400 (1002); `vault.max_batch` bounds it too.
    package var maxAliases: Int { box.fields.maxAliases }

    /// The scope a token needs to use the route at all: `egress:<id>` (or `egress:*`) for an
    /// egress route; an inbound route is open to the client it serves.
    package var scope: Scope? { door == .egress ? .egress(id) : nil }

    /// Whether an operation puts values back (so the caller needs `aliases:reveal`).
    var reveals: Bool {
        requestOperations.contains { $0.action == .reveal } || responseOperations.contains { $0.action == .reveal }
    }

    /// Whether an operation reveals files (so the caller needs `files:reveal` too).
    var revealsFiles: Bool { requestOperations.contains { $0.revealsFiles } }

    /// Whether the request's operations store values (so the caller is an alias caller).
    var redactsRequest: Bool { requestOperations.contains { $0.action == .redact } }

    /// Whether the route takes requests for `path`: under an inbound route's prefix (the path
    /// decoded), or matching an egress route's globs (as sent, percent-encoded).
    package func matches(path: String) -> Bool {
        switch matcher {
        case let .prefix(prefix): return path == prefix || path.hasPrefix(prefix + "/")
        case let .paths(globs): return globs.contains { $0.matches(path) }
        }
    }

    /// Whether the route takes `method` on `path`.
    package func allows(method: String, path: String) -> Bool { methods.contains(method) && matches(path: path) }

    /// An inbound route's `/proxy` prefix; empty for an egress route.
    var prefix: String {
        if case let .prefix(prefix) = matcher { return prefix }
        return ""
    }

    /// Whether the route's upstream is `scheme://host:port` (the forward door's target).
    func goes(to scheme: String, host: String, port: Int) -> Bool {
        guard let upstream else { return false }
        return upstream.scheme.rawValue == scheme && upstream.host == host && upstream.port == port
    }
}
