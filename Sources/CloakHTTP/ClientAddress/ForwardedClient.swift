import CloakCore

/// The client address of a request that came through trusted proxies, from the one header
/// `server.forwarded_header` names: `X-Forwarded-For` (the default: what haproxy's
/// `option forwardfor` and nginx append) or `Forwarded: for=` (RFC 7239). The other header is
/// never read: a proxy that appends one passes a client's own copy of the other through.
/// Pure: the peer and the headers are passed in.
///
/// Only a peer in ``TrustedProxies`` is believed; from anyone else the header is ignored whole,
/// so a client cannot choose its own rate bucket. The hops are walked right to left (each proxy
/// appends the address it saw) and the first that is not itself a trusted proxy is the client;
/// everything to its left is the client's own text and is never looked at, so it cannot spoil
/// the answer. When every hop walked is trusted, the left-most. A hop that the walk reaches and
/// that is no IP address, more than ``maxHops`` hops walked, or more than ``maxBytes`` bytes of
/// them is a ``Problem``: the request is served as from the peer.
public enum ForwardedClient {
    public static let maxHops = 32
    public static let maxBytes = 2_048

    /// Which header trusted proxies name the client in.
    public enum Header: String, Sendable, Equatable {
        case xForwardedFor = "x-forwarded-for"
        case forwarded = "forwarded"

        var name: String { self == .forwarded ? "Forwarded" : "X-Forwarded-For" }
    }

    public enum Problem: String, Sendable, Equatable {
        case oversized = "oversized"
        case tooManyHops = "too_many_hops"
        case malformed = "malformed"
    }

    public struct Resolution: Sendable, Equatable {
        /// The client's address (the peer's when nothing is believed).
        public let address: String
        /// Why the header of a trusted peer was not used.
        public let problem: Problem?
    }

    public static func resolve(
        peer: String, headers: [(name: String, value: String)], trusted: TrustedProxies,
        header: Header = .xForwardedFor
    ) -> Resolution {
        guard !trusted.isEmpty, trusted.contains(peer) else { return Resolution(address: peer, problem: nil) }
        let values = headers.filter { $0.name.caseInsensitiveEquals(header.name) }.map(\.value)
        guard !values.isEmpty else { return Resolution(address: peer, problem: nil) }
        let elements = values.flatMap { $0.split(separator: ",", omittingEmptySubsequences: false) }
        var walked = 0, bytes = 0
        var leftmostTrusted: IPAddress?
        for element in elements.reversed() {
            walked += 1
            bytes += element.utf8.count + 1
            guard walked <= maxHops else { return Resolution(address: peer, problem: .tooManyHops) }
            guard bytes <= maxBytes else { return Resolution(address: peer, problem: .oversized) }
            let text = header == .forwarded ? forValue(element) : Substring(element.trimmingOWS())
            guard let text, let address = IPAddress(text) else { return Resolution(address: peer, problem: .malformed) }
            if !trusted.contains(address) { return Resolution(address: address.description, problem: nil) }
            leftmostTrusted = address
        }
        return Resolution(address: leftmostTrusted?.description ?? peer, problem: nil)
    }

    /// The address in one `Forwarded` element's `for=` pair (`for=192.0.2.1`,
    /// `for="[2001:db8::1]:4711"`, `for="192.0.2.1:80"`); nil when it has none or holds no
    /// address (`unknown`, `_hidden`).
    static func forValue(_ element: Substring) -> Substring? {
        for pair in element.split(separator: ";") {
            let pair = pair.trimmingOWS()
            guard let equals = pair.firstIndex(of: "="), String(pair[..<equals]).caseInsensitiveEquals("for") else {
                continue
            }
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
        while upper > lower, self[index(before: upper)] == " " || self[index(before: upper)] == "\t" {
            upper = index(before: upper)
        }
        return self[lower..<upper]
    }
}
