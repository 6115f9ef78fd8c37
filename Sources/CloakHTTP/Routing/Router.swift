import CloakCore
import Foundation

/// Maps a method and a path to a handler, with `{name}` parameters and a trailing `{name...}`
/// catch-all. A path that exists under other methods resolves to ``Resolution/methodNotAllowed``
/// so the caller can answer 405 with `Allow`; `HEAD` is served by a `GET` route.
///
/// Paths are matched as the client sent them, still percent-encoded, one `/`-separated segment
/// at a time; each `{name}` parameter is then decoded on its own, so a parameter may hold an
/// encoded `/` (`/aliases/4111%2F1111`) without changing which route matches. A catch-all keeps
/// its raw text (a proxy forwards it as it came).
///
/// Templates are kept in a trie of path segments (literal children first, then a parameter,
/// then a catch-all), so resolving costs one step per segment whatever the number of
/// routes.
public struct Router<Handler: Sendable>: Sendable {
    public enum Resolution: Sendable {
        case found(Handler, parameters: RouteParameters, template: String)
        case methodNotAllowed(allowed: [HTTPMethod], template: String)
        case notFound
    }

    struct Endpoint: Sendable {
        let method: HTTPMethod
        let handler: Handler
        let template: String
    }

    final class Node: @unchecked Sendable {
        // Built before the router is shared, never mutated afterwards: read without the
        // runtime's access checks (one per field read, on every request).
        /// Children by their literal segment's bytes, compared in turn (a handful per node:
        /// cheaper than hashing the segment).
        @exclusivity(unchecked) var literals: [(name: [UInt8], node: Node)] = []
        @exclusivity(unchecked) var parameter: (name: String, node: Node)?
        @exclusivity(unchecked) var remainder: (name: String, endpoints: [Endpoint])?
        @exclusivity(unchecked) var endpoints: [Endpoint] = []
    }

    private var root = Node()
    /// Templates without parameters by their text: most requests resolve with one lookup and no
    /// split (the trie answers the same for them; it still serves every other spelling).
    private var exact: [String: [Endpoint]] = [:]

    public init() {}

    /// Adds a route such as `"/forms/{form}/validate"` or `"/proxy/{path...}"`.
    public mutating func add(_ method: HTTPMethod, _ template: String, _ handler: Handler) {
        if !isKnownUniquelyReferenced(&root) { root = Self.copy(root) }
        var node = root
        let endpoint = Endpoint(method: method, handler: handler, template: template)
        for part in Self.split(template) {
            if part.hasPrefix("{") && part.hasSuffix("...}") {
                let name = String(part.dropFirst().dropLast(4))
                node.remainder = (name, (node.remainder?.endpoints ?? []) + [endpoint])
                return
            }
            if part.hasPrefix("{") && part.hasSuffix("}") {
                let name = String(part.dropFirst().dropLast())
                if node.parameter == nil { node.parameter = (name, Node()) }
                node = node.parameter!.node
            } else {
                let name = Array(part.utf8)
                if let next = node.literals.first(where: { $0.name == name })?.node {
                    node = next
                } else {
                    let next = Node()
                    node.literals.append((name, next))
                    node = next
                }
            }
        }
        node.endpoints.append(endpoint)
        if !template.contains("{") { exact[template] = node.endpoints }
    }

    public func resolve(method: HTTPMethod, path: String) -> Resolution {
        if let endpoints = exact[path] { return Self.pick(method, endpoints, parameters: RouteParameters()) }
        var parameters = RouteParameters()
        var endpoints: [Endpoint] = []
        var path = path
        let found = path.withUTF8 { Self.walk(root, $0, from: 0, &parameters, &endpoints) }
        if !found { return .notFound }
        return Self.pick(method, endpoints, parameters: parameters)
    }

    private static func pick(_ method: HTTPMethod, _ endpoints: [Endpoint], parameters: RouteParameters) -> Resolution {
        if let e = endpoints.first(where: { $0.method == method })
            ?? (method == .HEAD ? endpoints.first { $0.method == .GET } : nil)
        {
            return .found(e.handler, parameters: parameters, template: e.template)
        }
        var allowed: [HTTPMethod] = []
        for e in endpoints {
            allowed.append(e.method)
            if e.method == .GET { allowed.append(.HEAD) }
        }
        return .methodNotAllowed(allowed: allowed, template: endpoints[0].template)
    }

    /// Finds the endpoints for the segments of `path` from byte `from` below `node`: literals
    /// before a parameter before a catch-all. Segments are byte ranges of the path (empty ones
    /// skipped, as `split` would), so resolving allocates nothing but the parameters.
    private static func walk(
        _ node: Node, _ path: UnsafeBufferPointer<UInt8>, from: Int,
        _ parameters: inout RouteParameters, _ endpoints: inout [Endpoint]
    ) -> Bool {
        let slash = UInt8(ascii: "/")
        var start = from
        while start < path.count, path[start] == slash { start += 1 }
        guard start < path.count else {
            guard !node.endpoints.isEmpty else { return false }
            endpoints = node.endpoints
            return true
        }
        var end = start
        while end < path.count, path[end] != slash { end += 1 }
        let part = UnsafeBufferPointer(rebasing: path[start..<end])
        if let next = node.literals.first(where: { $0.name.hasSameBytes(as: part) })?.node,
            walk(next, path, from: end, &parameters, &endpoints)
        {
            return true
        }
        if let (name, next) = node.parameter {
            guard let decoded = Self.percentDecoded(part) else { return false }
            // Put back what the name held if this branch fails (no copy of the parameters: a
            // copy would make the insertion above copy them all).
            let previous = parameters.update(name, to: decoded)
            if walk(next, path, from: end, &parameters, &endpoints) { return true }
            parameters.update(name, to: previous)
        }
        if let (name, found) = node.remainder {
            let rest = UnsafeBufferPointer(rebasing: path[start...])
            parameters[name] = Self.collapsingSlashes(rest)
            endpoints = found
            return true
        }
        return false
    }

    /// The rest of a path with empty segments dropped (`a//b/` is `a/b`), as splitting at `/` and
    /// joining would, without either when there is none (the usual case).
    static func collapsingSlashes(_ rest: UnsafeBufferPointer<UInt8>) -> String {
        let slash = UInt8(ascii: "/")
        var clean = rest.last != slash
        if clean {
            for i in 1..<max(rest.count, 1) where rest[i] == slash && rest[i - 1] == slash {
                clean = false
                break
            }
        }
        if clean { return String(decoding: rest, as: UTF8.self) }
        return String(decoding: rest, as: UTF8.self).split(separator: "/").joined(separator: "/")
    }

    private static func copy(_ node: Node) -> Node {
        let out = Node()
        out.literals = node.literals.map { ($0.name, copy($0.node)) }
        out.parameter = node.parameter.map { ($0.name, copy($0.node)) }
        out.remainder = node.remainder
        out.endpoints = node.endpoints
        return out
    }

    /// A segment's bytes (UTF-8: a path's segment, cut at `/`) with its `%XX` escapes decoded;
    /// nil when an escape is malformed or the bytes are not UTF-8 (as Foundation's
    /// `removingPercentEncoding`, without bridging to it).
    static func percentDecoded(_ part: UnsafeBufferPointer<UInt8>) -> String? {
        guard part.contains(UInt8(ascii: "%")) else { return String(decoding: part, as: UTF8.self) }
        return PercentDecoding.decode(part, plusAsSpace: false)
    }

    private static func split(_ path: String) -> [Substring] {
        path.split(separator: "/", omittingEmptySubsequences: true)
    }
}
