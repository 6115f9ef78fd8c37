import CloakCore
import CloakHTTP
import Foundation

/// Reads both kinds of ``Route``: `routes[]` (inbound) and `egress.routes[]`.
extension Route {
    /// Reads one `routes[]` entry.
    static func readInbound(_ node: ConfigNode, at p: String, forms: [String: FormSchema], _ r: ConfigReader) -> Route?
    {
        guard
            let m = r.mapping(
                node, at: p,
                allowed: [
                    "id", "path", "form", "upstream", "methods", "headers", "connect_timeout_s", "response_timeout_s",
                    "forward_authorization", "forward_baggage", "ca_file", "request", "response", "reuse",
                    "unselected_cards",
                ])
        else { return nil }
        let id = r.string(m["id"], at: "\(p).id")
        if let id, UUID(uuidString: id) == nil { r.issue("\(p).id", "must be a UUID", m["id"]) }
        if id == nil { r.issue("\(p).id", "is required", node) }
        let path = r.string(m["path"], at: "\(p).path")
        if let path, !path.hasPrefix("/") { r.issue("\(p).path", "must start with /", m["path"]) }
        if path == nil { r.issue("\(p).path", "is required", node) }
        let form = r.string(m["form"], at: "\(p).form")
        if let form, forms[form] == nil { r.issue("\(p).form", "names no configured form", m["form"]) }
        if let form, let schema = forms[form], schema.hasFileFields {
            r.issue(
                "\(p).form",
                "names a form with a file field: files are uploaded through /forms/\(form)/tokens and revealed by a route's reveal",
                m["form"])
        }
        let upstream = r.string(m["upstream"], at: "\(p).upstream")
        if let upstream, upstream != "echo", UpstreamRequest.parse(url: upstream) == nil {
            r.issue("\(p).upstream", "expected an http:// or https:// URL, or echo", m["upstream"])
        }
        if upstream == nil { r.issue("\(p).upstream", "is required", node) }
        let methods = r.strings(m["methods"], at: "\(p).methods") ?? ["POST"]
        for (i, method) in methods.enumerated() where !["GET", "POST", "PUT", "PATCH", "DELETE"].contains(method) {
            r.issue("\(p).methods[\(i)]", "expected GET, POST, PUT, PATCH or DELETE")
        }
        var headers: [(name: String, value: String)] = []
        for (name, value) in r.namedMapping(m["headers"], at: "\(p).headers") {
            if let v = r.string(value, at: "\(p).headers.\(name)") {
                if v.contains(where: { $0 == "\r" || $0 == "\n" }) {
                    r.issue("\(p).headers.\(name)", "must be one line")
                }
                headers.append((name, v))
            }
        }
        let connect = r.double(m["connect_timeout_s"], at: "\(p).connect_timeout_s", min: 0.001, max: 600) ?? 5
        let response = r.double(m["response_timeout_s"], at: "\(p).response_timeout_s", min: 0.001, max: 3600) ?? 30
        let forwardAuth = m["forward_authorization"].flatMap { r.bool($0, at: "\(p).forward_authorization") } ?? false
        let forwardBaggage = m["forward_baggage"].flatMap { r.bool($0, at: "\(p).forward_baggage") } ?? false
        let reuse = m["reuse"].flatMap { r.bool($0, at: "\(p).reuse") } ?? true
        let caFile = r.string(m["ca_file"], at: "\(p).ca_file")
        if let caFile, !FileManager.default.isReadableFile(atPath: caFile) {
            r.issue("\(p).ca_file", "cannot read \(caFile)", m["ca_file"])
        } else if let caFile, let problem = TLSClientContext.problem(caFile: caFile) {
            r.issue("\(p).ca_file", "\(problem) from \(caFile)", m["ca_file"])
        }
        var unselected = Route.UnselectedCards.refuse
        if let name = r.string(m["unselected_cards"], at: "\(p).unselected_cards") {
            if let mode = Route.UnselectedCards(rawValue: name) {
                unselected = mode
            } else {
                r.issue("\(p).unselected_cards", "expected refuse, redact or allow", m["unselected_cards"])
            }
        }
        let (operations, steps) = Route.Operation.readRequestList(m["request"], at: "\(p).request", r)
        let (responseOperations, responseSteps) = Route.Operation.readResponseList(
            m["response"], at: "\(p).response", r)
        if form != nil && (m["request"] != nil || m["response"] != nil) {
            r.issue("\(p).form", "a route has a form or request/response operations, not both")
        }
        if upstream == "echo", let i = operations.firstIndex(where: \.revealsFiles) {
            r.issue("\(p).request[\(i)]", "files are revealed on the way to an upstream, never echoed to the caller")
        }
        if upstream == "echo", !steps.isEmpty || !responseSteps.isEmpty {
            r.issue(
                "\(p).upstream",
                "steps sign, encrypt and decrypt what goes to and comes from an upstream: echo has none")
        }
        Route.Operation.refuseFileReveals(responseOperations, at: "\(p).response", r)
        guard let id, let path, let upstream else { return nil }
        var prefix = path
        while prefix.count > 1 && prefix.hasSuffix("/") { prefix.removeLast() }
        var target: Route.Upstream?
        if upstream != "echo", let parsed = UpstreamRequest.parse(url: upstream) {
            // Inbound upstreams are the operator's own services: private addresses are allowed.
            target = Route.Upstream(
                scheme: parsed.scheme, host: parsed.host, port: parsed.port, path: parsed.path, caFile: caFile,
                allowPrivate: true, connectTimeoutSeconds: connect, responseTimeoutSeconds: response, reuse: reuse,
                trustStamp: trustStamp(of: [caFile]))
        }
        return Route(
            id: id, door: .inbound, matcher: .prefix("/proxy" + (prefix == "/" ? "" : prefix)), methods: methods,
            upstream: target, form: form, requestOperations: operations, responseOperations: responseOperations,
            headers: headers, forwardAuthorization: forwardAuth, forwardBaggage: forwardBaggage, requestSteps: steps,
            responseSteps: responseSteps, unselectedCards: unselected)
    }

    /// Reads one `egress.routes[]` entry.
    static func readEgress(_ node: ConfigNode, at p: String, _ r: ConfigReader) -> Route? {
        guard
            let m = r.mapping(
                node, at: p,
                allowed: [
                    "id", "upstream", "paths", "methods", "request", "response", "ca_file", "client_cert",
                    "allow_private", "reuse", "forward_baggage",
                    "max_aliases", "connect_timeout_s", "response_timeout_s",
                ])
        else { return nil }
        let id = r.string(m["id"], at: "\(p).id")
        if id == nil { r.issue("\(p).id", "is required", node) }
        if let id, !EgressSettings.isRouteID(id) { r.issue("\(p).id", "expected [a-z0-9_-]+ (at most 64)", m["id"]) }
        var upstream: (scheme: UpstreamRequest.Scheme, host: String, port: Int, path: String)?
        if let text = r.string(m["upstream"], at: "\(p).upstream") {
            upstream = UpstreamRequest.parse(url: text)
            if upstream == nil || upstream?.path != "/" || text.hasSuffix("/") {
                r.issue("\(p).upstream", "expected scheme://host[:port] (http or https, no path)", m["upstream"])
                upstream = nil
            }
        } else {
            r.issue("\(p).upstream", "is required", node)
        }
        var paths: [PathGlob] = []
        for (i, text) in (r.strings(m["paths"], at: "\(p).paths") ?? ["/*"]).enumerated() {
            do { paths.append(try PathGlob(text)) } catch { r.issue("\(p).paths[\(i)]", error.description) }
        }
        let methods = r.strings(m["methods"], at: "\(p).methods") ?? ["POST"]
        for (i, method) in methods.enumerated() where !["GET", "POST", "PUT", "PATCH", "DELETE"].contains(method) {
            r.issue("\(p).methods[\(i)]", "expected GET, POST, PUT, PATCH or DELETE")
        }
        let (request, steps) = Route.Operation.readRequestList(m["request"], at: "\(p).request", r)
        let (response, responseSteps) = Route.Operation.readResponseList(m["response"], at: "\(p).response", r)
        Route.Operation.refuseFileReveals(response, at: "\(p).response", r)
        let (caFile, client) = Route.readTrust(m, at: p, r)
        let allowPrivate = m["allow_private"].flatMap { r.bool($0, at: "\(p).allow_private") } ?? false
        if let upstream, !allowPrivate,
            AddressPolicy.isLiteral(upstream.host) || upstream.host.lowercased() == "localhost"
        {
            r.issue("\(p).upstream", "is an IP literal or localhost: set allow_private: true to allow it")
        }
        if let upstream, upstream.scheme == .http, !allowPrivate {
            r.issue(
                "\(p).upstream",
                "revealed values would cross the network in clear text: use https (http only with allow_private: true, for an upstream on a private network)"
            )
        }
        let maxAliases = r.int(m["max_aliases"], at: "\(p).max_aliases", min: 1, max: 10_000) ?? 100
        let connect = r.double(m["connect_timeout_s"], at: "\(p).connect_timeout_s", min: 0.001, max: 600) ?? 5
        let timeout = r.double(m["response_timeout_s"], at: "\(p).response_timeout_s", min: 0.001, max: 3600) ?? 30
        let reuse = m["reuse"].flatMap { r.bool($0, at: "\(p).reuse") } ?? true
        let forwardBaggage = m["forward_baggage"].flatMap { r.bool($0, at: "\(p).forward_baggage") } ?? false
        guard let id, let upstream else { return nil }
        return Route(
            id: id, door: .egress, matcher: .paths(paths), methods: methods,
            upstream: Route.Upstream(
                scheme: upstream.scheme, host: upstream.host.lowercased(), port: upstream.port, path: "/",
                caFile: caFile, clientCertificate: client, allowPrivate: allowPrivate,
                connectTimeoutSeconds: connect, responseTimeoutSeconds: timeout, reuse: reuse,
                trustStamp: trustStamp(of: [caFile, client?.certificateChain, client?.privateKey])),
            requestOperations: request, responseOperations: response, forwardAuthorization: true,
            forwardBaggage: forwardBaggage, maxAliases: maxAliases, requestSteps: steps,
            responseSteps: responseSteps)
    }
}

extension Route {
    /// `ca_file` (PEM, trusted CAs; the system's when absent) and `client_cert: {cert, key}`
    /// (mutual TLS) of an upstream: each file readable, and usable by OpenSSL.
    static func readTrust(_ m: [String: ConfigNode], at p: String, _ r: ConfigReader) -> (
        caFile: String?, client: UpstreamRequest.ClientCertificate?
    ) {
        let caFile = r.string(m["ca_file"], at: "\(p).ca_file")
        if let caFile, !FileManager.default.isReadableFile(atPath: caFile) {
            r.issue("\(p).ca_file", "cannot read \(caFile)", m["ca_file"])
        }
        var client: UpstreamRequest.ClientCertificate?
        if let c = r.mapping(m["client_cert"], at: "\(p).client_cert", allowed: ["cert", "key"]) {
            let cert = r.string(c["cert"], at: "\(p).client_cert.cert")
            let key = r.string(c["key"], at: "\(p).client_cert.key")
            if let cert, let key {
                client = .init(certificateChain: cert, privateKey: key)
                for (name, file) in [("cert", cert), ("key", key)]
                where !FileManager.default.isReadableFile(atPath: file) {
                    r.issue("\(p).client_cert.\(name)", "cannot read \(file)", c[name])
                }
            } else {
                r.issue("\(p).client_cert", "needs both cert and key", m["client_cert"])
            }
        }
        let filesReadable = [caFile, client?.certificateChain, client?.privateKey].allSatisfy {
            $0.map { FileManager.default.isReadableFile(atPath: $0) } ?? true
        }
        if filesReadable, caFile != nil || client != nil,
            let problem = TLSClientContext.problem(caFile: caFile, clientCertificate: client)
        {
            r.issue(
                problem == TLSClientContext.trustedCertificatesUnusable ? "\(p).ca_file" : "\(p).client_cert", problem)
        }
        return (caFile, client)
    }

    /// A number that changes when any of `files` changes: connections opened after a reload
    /// that changed a route's trust files use a TLS context made from the new files. Only
    /// compared within one process (the hash is seeded per process).
    static func trustStamp(of files: [String?]) -> Int {
        var hasher = Hasher()
        for case let file? in files {
            hasher.combine(file)
            hasher.combine(FileManager.default.contents(atPath: file))
        }
        return hasher.finalize()
    }
}
