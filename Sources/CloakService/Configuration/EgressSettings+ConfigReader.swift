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
            guard let route = Route.readEgress(node, at: "egress.routes[\(i)]", r) else { continue }
            if !ids.insert(route.id).inserted { r.issue("egress.routes[\(i)].id", "duplicate route id") }
            settings.routes.append(route)
        }
        return settings
    }
}
