/// Maps a method and a path to a handler, with `{name}` parameters and a trailing `{name...}`
/// catch-all. A path that exists under other methods resolves to ``Resolution/methodNotAllowed``
/// so the caller can answer 405 with `Allow`; `HEAD` is served by a `GET` route.
public struct Router<Handler: Sendable>: Sendable {
    enum Segment: Sendable, Equatable {
        case literal(String)
        case parameter(String)
        case remainder(String)
    }

    struct Route: Sendable {
        let method: HTTPMethod
        let template: String
        let segments: [Segment]
        let handler: Handler
    }

    public enum Resolution {
        case found(Handler, parameters: [String: String], template: String)
        case methodNotAllowed(allowed: [HTTPMethod], template: String)
        case notFound
    }

    private var routes: [Route] = []
    /// Routes without parameters, by their exact path: the common case skips matching.
    private var exactRoutes: [String: [Route]] = [:]

    public init() {}

    /// Adds a route such as `"/forms/{form}/validate"` or `"/proxy/{path...}"`.
    public mutating func add(_ method: HTTPMethod, _ template: String, _ handler: Handler) {
        let segments = Self.split(template).map { part -> Segment in
            if part.hasPrefix("{") && part.hasSuffix("...}") { return .remainder(String(part.dropFirst().dropLast(4))) }
            if part.hasPrefix("{") && part.hasSuffix("}") { return .parameter(String(part.dropFirst().dropLast())) }
            return .literal(String(part))
        }
        let route = Route(method: method, template: template, segments: segments, handler: handler)
        routes.append(route)
        if segments.allSatisfy({ if case .literal = $0 { return true } else { return false } }) {
            exactRoutes[template, default: []].append(route)
        }
    }

    public func resolve(method: HTTPMethod, path: String) -> Resolution {
        if let exact = exactRoutes[path] {
            if let r = exact.first(where: { $0.method == method || (method == .HEAD && $0.method == .GET) }) {
                return .found(r.handler, parameters: [:], template: r.template)
            }
        }
        let parts = Self.split(path)
        var allowed: [HTTPMethod] = []
        var matchedTemplate: String?
        for route in routes {
            guard let parameters = Self.match(route.segments, parts) else { continue }
            if route.method == method || (method == .HEAD && route.method == .GET) {
                return .found(route.handler, parameters: parameters, template: route.template)
            }
            matchedTemplate = matchedTemplate ?? route.template
            allowed.append(route.method)
            if route.method == .GET { allowed.append(.HEAD) }
        }
        if let matchedTemplate { return .methodNotAllowed(allowed: allowed, template: matchedTemplate) }
        return .notFound
    }

    private static func split(_ path: String) -> [Substring] {
        path.split(separator: "/", omittingEmptySubsequences: true)
    }

    private static func match(_ segments: [Segment], _ parts: [Substring]) -> [String: String]? {
        var parameters: [String: String] = [:]
        for (i, segment) in segments.enumerated() {
            switch segment {
            case let .remainder(name):
                guard i < parts.count else { return nil }
                parameters[name] = parts[i...].joined(separator: "/")
                return parameters
            case let .literal(text):
                guard i < parts.count, parts[i] == text else { return nil }
            case let .parameter(name):
                guard i < parts.count else { return nil }
                parameters[name] = String(parts[i])
            }
        }
        return parts.count == segments.count ? parameters : nil
    }
}
