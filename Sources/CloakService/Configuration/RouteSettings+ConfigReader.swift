import CloakCore
import CloakHTTP
import Foundation

extension ServiceConfiguration.RouteSettings {
    /// Reads one `routes[]` entry.
    static func read(_ node: ConfigNode, at p: String, forms: [String: FormSchema], _ r: ConfigReader) -> Self? {
        guard
            let m = r.mapping(
                node, at: p,
                allowed: [
                    "id", "path", "form", "upstream", "methods", "headers", "connect_timeout_s", "response_timeout_s",
                    "forward_authorization", "ca_file", "request", "response",
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
        let caFile = r.string(m["ca_file"], at: "\(p).ca_file")
        if let caFile, !FileManager.default.isReadableFile(atPath: caFile) {
            r.issue("\(p).ca_file", "cannot read \(caFile)", m["ca_file"])
        }
        let operations = ServiceConfiguration.RouteOperation.readList(m["request"], at: "\(p).request", r)
        let responseOperations = ServiceConfiguration.RouteOperation.readList(m["response"], at: "\(p).response", r)
        if form != nil && (m["request"] != nil || m["response"] != nil) {
            r.issue("\(p).form", "a route has a form or request/response operations, not both")
        }
        guard let id, let path, let upstream else { return nil }
        var settings = Self(
            id: id, path: path, form: form, upstream: upstream, methods: methods, headers: headers,
            connectTimeoutSeconds: connect, responseTimeoutSeconds: response, forwardAuthorization: forwardAuth,
            caFile: caFile)
        settings.requestOperations = operations
        settings.responseOperations = responseOperations
        return settings
    }
}
