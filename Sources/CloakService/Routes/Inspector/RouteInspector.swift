import CloakCore
import CloakCrypto
import CloakHTTP
import Synchronization

/// Runs a sample request through a route's selectors and steps without sending it (issue 59,
/// item 2): `cloak routes test` and `POST /admin/routes/{id}/test`. The route's own state
/// machine (``RouteExchange``) decides, exactly as for a real request; where it would ask the
/// vault, every selected value becomes a marker naming its selector (and the format it would be
/// aliased in), and where it would send, the request is kept for the report.
///
/// What it never does: touch the vault (no value is revealed or stored, no alias looked up),
/// use a configured key (each step signs with a throwaway key of the same kind, so the
/// inspector is never a signing oracle for the provider's key), log or keep the sample, or send
/// anything off the node.
package struct RouteInspector {
    let route: Route
    let maxSelected: Int

    init(route: Route, maxSelected: Int = 100) {
        self.route = route
        self.maxSelected = min(route.maxAliases, maxSelected)
    }

    func inspect(_ sample: RouteSample) -> RouteInspection {
        var report = RouteInspection(route: route.id, door: route.door, form: route.form)
        report.files = route.requestOperations.filter(\.revealsFiles).flatMap {
            $0.multipart + $0.json.map(\.description)
        }
        let headers = route.forwardedHeaders(
            sample.headers, keepAuthorization: route.door == .egress || route.forwardAuthorization)
        let plan = RouteExchange.Plan(
            request: route.requestOperations.filter { !$0.revealsFiles }, response: route.responseOperations,
            maxSelected: maxSelected, limitName: "max_aliases of route \(route.id)", hasVault: true,
            inbound: route.door == .inbound
                ? RouteExchange.Inbound(
                    routeID: route.id, unselectedCards: route.unselectedCards, query: sample.query ?? "",
                    path: sample.path)
                : nil)
        var machine = RouteExchange(plan: plan)
        if let selection = try? MessageSelection(body: sample.body, headers: headers, operations: plan.request) {
            (report.matched, report.missed) = selection.selectors(of: plan.request)
        }
        var action = machine.event(.start(body: sample.body, headers: headers))
        // Each action answered at once: the machine goes from selection to sending in a few steps.
        for _ in 0..<16 {
            switch action {
            case let .refuse(error):
                report.refusal = error
                return report
            case let .transform(selection, _):
                let markers = selection.items.map(Self.marker)
                for item in selection.items {
                    if item.operation.action == .reveal {
                        report.revealed.append(item.selector)
                    } else {
                        report.redacted.append(item.selector)
                    }
                }
                action = machine.event(.transformed(.success(markers)))
            case let .checkAliases(values):
                // No vault: every card-like value outside the selectors is taken for a card.
                report.unselectedCards = values.count
                action = machine.event(.aliasesChecked(.success([])))
            case let .send(body, headers):
                sent(body, headers, sample, into: &report)
                return report
            case let .finish(_, outcome):
                report.refusal = outcome.error
                return report
            case .none:
                return report
            }
        }
        return report
    }

    /// What stands for a selected value: its selector, and the format a redaction aliases it in.
    static func marker(_ item: MessageSelection.Item) -> String {
        switch item.operation.action {
        case .reveal: "<revealed \(item.selector)>"
        case .redact: "<redacted \(item.selector) as \(item.operation.format.rawValue)>"
        }
    }

    /// The request as the upstream would get it, and what each step would write over it.
    private func sent(
        _ body: [UInt8], _ headers: [(name: String, value: String)], _ sample: RouteSample,
        into report: inout RouteInspection
    ) {
        guard let upstream = route.upstream else {
            report.sent = RouteInspection.Sent(
                method: sample.method.rawValue, url: "(echoed to the caller)", headers: headers, body: body)
            return
        }
        var headers = route.sentHeaders(headers, contentType: nil)
        if !route.responseSteps.isEmpty {
            headers.removeAll { $0.name.caseInsensitiveEquals("Accept-Encoding") }
            headers.append(("Accept-Encoding", "identity"))
        }
        let target = Route.target(upstream, rest: sample.path, query: sample.query)
        var message = OutgoingMessage(
            method: sample.method.rawValue, scheme: upstream.scheme, host: upstream.host, port: upstream.port,
            target: target, headers: headers, body: body)
        for (index, step) in route.requestSteps.enumerated() {
            var shown = RouteInspection.Step(name: step.name)
            let before = message
            do {
                let (throwaway, key) = try Self.throwaway(step)
                shown.key = key
                try Route.Step.apply([throwaway], to: &message, firstIndex: route.requestOperations.count + index)
            } catch let error as CloakError {
                shown.error = error.message
                report.steps.append(shown)
                report.refusal = error
                return
            } catch {
                shown.error = "a throwaway key could not be made: \(error)"
                report.steps.append(shown)
                return
            }
            for header in message.headers
            where !before.headers.contains(where: { $0.name == header.name && $0.value == header.value }) {
                shown.headers.append((header.name, Self.shown(header, step: step)))
            }
            if message.body != before.body { shown.body = "<\(step.name): \(message.body.count) bytes>" }
            report.steps.append(shown)
        }
        let url = upstream.scheme.rawValue + "://" + message.authority + message.target
        let rewritten = report.steps.last { $0.body != nil }?.body
        report.sent = RouteInspection.Sent(
            method: sample.method.rawValue, url: url,
            headers: message.headers.map { header in
                // The route's own headers (a provider's API key) show as their size only.
                if route.headers.contains(where: { $0.name.caseInsensitiveEquals(header.name) }) {
                    return (header.name, "<configured: \(header.value.utf8.count) bytes>")
                }
                let step = report.steps.first { $0.headers.contains { $0.name == header.name } }
                return (header.name, step?.headers.first { $0.name == header.name }?.value ?? header.value)
            },
            body: rewritten.map { Array($0.utf8) } ?? message.body)
    }

    /// A header a step wrote, as the report shows it: what names the signature's inputs as it
    /// is, a signature or MAC as its size only.
    static func shown(_ header: (name: String, value: String), step: Route.Step) -> String {
        let plain: Set<String> = ["signature-input", "content-digest", "digest"]
        if plain.contains(header.name.lowercased()) { return header.value }
        return "<signature: \(header.value.utf8.count) bytes>"
    }

    /// `step` with a key of its own kind made for this run, and how that key is described.
    static func throwaway(_ step: Route.Step) throws -> (Route.Step, String?) {
        switch step {
        case .digest:
            return (step, nil)
        case var .httpSignature(signing):
            let (key, text) = try throwaway(signing.key)
            signing.key = key
            return (.httpSignature(signing), text)
        case var .cavageSignature(signing):
            let (key, text) = try throwaway(signing.key)
            signing.key = key
            return (.cavageSignature(signing), text)
        case var .oauth1BodyHash(signing):
            let (key, text) = try throwaway(signing.key)
            signing.key = key
            return (.oauth1BodyHash(signing), text)
        case var .jws(signing):
            let (key, text) = try throwaway(signing.key)
            signing.key = key
            return (.jws(signing), text)
        case var .jwe(encryption):
            let kind = encryption.key.kind, bits = encryption.key.bits
            encryption.key = try ThrowawayKeys.key(kind, bits: bits)
            return (
                .jwe(encryption),
                "a throwaway \(Self.describe(kind, bits)) public key (the route's is \(Self.describe(kind, bits)))"
            )
        case var .hmacHeader(header):
            header.key = HMACKey(SymmetricKey(SecureRandom.bytes(32)))
            return (.hmacHeader(header), "a throwaway 32-byte HMAC secret")
        }
    }

    static func throwaway(_ key: StepKey) throws -> (StepKey, String) {
        switch key {
        case .secret:
            return (.secret(HMACKey(SymmetricKey(SecureRandom.bytes(32)))), "a throwaway 32-byte HMAC secret")
        case let .privateKey(real):
            let made = try ThrowawayKeys.key(real.kind, bits: real.bits)
            let kind = describe(real.kind, real.bits)
            return (.privateKey(made), "a throwaway \(kind) private key (the route's is \(kind))")
        case let .publicKey(real):
            let made = try ThrowawayKeys.key(real.kind, bits: real.bits)
            let kind = describe(real.kind, real.bits)
            return (.publicKey(made), "a throwaway \(kind) public key (the route's is \(kind))")
        }
    }

    static func describe(_ kind: AsymmetricKeyKind, _ bits: Int) -> String {
        kind == .rsa ? "RSA \(bits)-bit" : kind.rawValue
    }
}

extension RouteInspector {
    /// `cloak routes test`: the route `id` of `configuration` (inbound or egress) tried with the
    /// sample document `sample`; the report, and whether the route would send.
    /// - Throws: 1404 for a route the configuration does not have, 1002 for a sample that is not one.
    package static func test(_ configuration: ServiceConfiguration, route id: String, sample: [UInt8])
        throws(CloakError) -> (report: JSONValue, wouldSend: Bool)
    {
        guard let route = (configuration.routes + configuration.egress.routes).first(where: { $0.id == id }) else {
            throw .notFound("the configuration has no route \(Redaction.scrub(id, limit: 64))")
        }
        let document: JSONValue
        do { document = try JSONParser().parse(sample) } catch {
            throw .malformed("the sample is not JSON: \(error)")
        }
        let report = RouteInspector(route: route, maxSelected: configuration.vault.maxBatch)
            .inspect(try RouteSample(json: document))
        return (report.document, report.refusal == nil && report.sent != nil)
    }
}

/// The inspector's throwaway keys: one per kind and size for the process's life, made on first
/// use. Never a configured key, and an inspection costs no key generation after the first (an
/// RSA key takes tens of milliseconds: a `routes:test` token cannot keep the step workers busy).
enum ThrowawayKeys {
    private static let made = Mutex<[String: AsymmetricKey]>([:])

    static func key(_ kind: AsymmetricKeyKind, bits: Int) throws -> AsymmetricKey {
        let name = "\(kind.rawValue)/\(bits)"
        if let key = made.withLock({ $0[name] }) { return key }
        let key = try AsymmetricKey.generate(kind, bits: bits)
        return made.withLock { made in
            if let first = made[name] { return first }
            made[name] = key
            return key
        }
    }
}
