import CloakCore
import CloakHTTP
import Foundation

extension EgressSettings {
    /// Reads `egress`: `listen`, `ca: {cert, key}` and `routes[]`.
    static func read(_ node: ConfigNode?, _ r: ConfigReader) -> EgressSettings {
        var settings = EgressSettings()
        guard let m = r.mapping(node, at: "egress", allowed: ["listen", "ca", "routes"]) else { return settings }
        if let listen = r.string(m["listen"], at: "egress.listen") {
            if let (host, port) = ServiceConfiguration.parseListen(listen) {
                settings.listen = (host, port)
            } else {
                r.issue("egress.listen", "expected HOST:PORT, e.g. 127.0.0.1:8081", m["listen"])
            }
        }
        if let ca = r.mapping(m["ca"], at: "egress.ca", allowed: ["cert", "key"]) {
            if let v = r.string(ca["cert"], at: "egress.ca.cert") { settings.caCertificate = v }
            if let v = r.string(ca["key"], at: "egress.ca.key") { settings.caKey = v }
        }
        let routes = r.sequence(m["routes"], at: "egress.routes") ?? []
        var ids = Set<String>()
        for (i, node) in routes.enumerated() {
            guard let route = EgressRoute.read(node, at: "egress.routes[\(i)]", r) else { continue }
            if !ids.insert(route.id).inserted { r.issue("egress.routes[\(i)].id", "duplicate route id") }
            settings.routes.append(route)
        }
        return settings
    }
}

extension EgressRoute {
    static func read(_ node: ConfigNode, at p: String, _ r: ConfigReader) -> EgressRoute? {
        guard
            let m = r.mapping(
                node, at: p,
                allowed: [
                    "id", "upstream", "paths", "methods", "request", "response", "ca_file", "client_cert",
                    "allow_private",
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
        let request = ServiceConfiguration.RouteOperation.readList(m["request"], at: "\(p).request", r)
        let response = ServiceConfiguration.RouteOperation.readList(m["response"], at: "\(p).response", r)
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
        guard let id, let upstream else { return nil }
        return EgressRoute(
            id: id, scheme: upstream.scheme, host: upstream.host.lowercased(), port: upstream.port, paths: paths,
            methods: methods, requestOperations: request, responseOperations: response, caFile: caFile,
            clientCertificate: client, allowPrivate: allowPrivate, maxAliases: maxAliases,
            connectTimeoutSeconds: connect,
            responseTimeoutSeconds: timeout)
    }
}
