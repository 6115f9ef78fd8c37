/// The client address of a request that came through trusted proxies, from `Forwarded: for=`
/// (RFC 7239) or `X-Forwarded-For`. Pure: the peer and the headers are passed in.
///
/// Only a peer in ``TrustedProxies`` is believed; from anyone else both headers are ignored
/// whole, so a client cannot choose its own rate bucket. The hops are read right to left (each
/// proxy appends the address it saw) and the first that is not itself a trusted proxy is the
/// client; when every hop is trusted, the left-most. `Forwarded` is read when present, else
/// `X-Forwarded-For`; several header lines of one name are one list, in order. Anything
/// malformed (a hop that is no IP address, more than ``maxHops`` hops, more than ``maxBytes``
/// bytes of header) is a ``Problem``: the request is served as from the peer.
public enum ForwardedClient {
    public static let maxHops = 32
    public static let maxBytes = 2_048

    public enum Problem: String, Sendable, Equatable {
        case oversized = "oversized"
        case tooManyHops = "too_many_hops"
        case malformed = "malformed"
    }

    public struct Resolution: Sendable, Equatable {
        /// The client's address (the peer's when nothing is believed).
        public let address: String
        /// Why the headers of a trusted peer were not used.
        public let problem: Problem?
    }

    public static func resolve(peer: String, headers: [(name: String, value: String)], trusted: TrustedProxies) -> Resolution {
        guard !trusted.isEmpty, trusted.contains(peer) else { return Resolution(address: peer, problem: nil) }
        let forwarded = headers.filter { $0.name.caseInsensitiveEquals("Forwarded") }.map(\.value)
        let xff = headers.filter { $0.name.caseInsensitiveEquals("X-Forwarded-For") }.map(\.value)
        let values = forwarded.isEmpty ? xff : forwarded
        guard !values.isEmpty else { return Resolution(address: peer, problem: nil) }
        guard values.reduce(0, { $0 + $1.utf8.count + 1 }) <= maxBytes else { return Resolution(address: peer, problem: .oversized) }
        let elements = values.flatMap { $0.split(separator: ",", omittingEmptySubsequences: false) }
        guard elements.count <= maxHops else { return Resolution(address: peer, problem: .tooManyHops) }
        var hops: [IPAddress] = []
        for element in elements {
            let text = forwarded.isEmpty ? Substring(element.trimmingOWS()) : forValue(element)
            guard let text, let address = IPAddress(text) else { return Resolution(address: peer, problem: .malformed) }
            hops.append(address)
        }
        let client = hops.last { !trusted.contains($0) } ?? hops[0]
        return Resolution(address: client.description, problem: nil)
    }

    /// The address in one `Forwarded` element's `for=` pair (`for=192.0.2.1`,
    /// `for="[2001:db8::1]:4711"`, `for="192.0.2.1:80"`); nil when it has none or holds no
    /// address (`unknown`, `_hidden`).
    static func forValue(_ element: Substring) -> Substring? {
        for pair in element.split(separator: ";") {
            let pair = pair.trimmingOWS()
            guard let equals = pair.firstIndex(of: "="), String(pair[..<equals]).caseInsensitiveEquals("for") else { continue }
            var value = pair[pair.index(after: equals)...]
            if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 { value = value.dropFirst().dropLast() }
            if value.hasPrefix("[") {
                guard let close = value.firstIndex(of: "]") else { return nil }
                return value[value.index(after: value.startIndex)..<close]
            }
            // IPv4 with an optional port; an unbracketed IPv6 is taken whole (RFC 7239 brackets it).
            if value.filter({ $0 == ":" }).count == 1, let colon = value.firstIndex(of: ":") { return value[..<colon] }
            return value
        }
        return nil
    }
}

extension StringProtocol {
    /// Without leading and trailing spaces and tabs.
    func trimmingOWS() -> SubSequence {
        var lower = startIndex, upper = endIndex
        while lower < upper, self[lower] == " " || self[lower] == "\t" { lower = index(after: lower) }
        while upper > lower, self[index(before: upper)] == " " || self[index(before: upper)] == "\t" { upper = index(before: upper) }
        return self[lower..<upper]
    }
}
