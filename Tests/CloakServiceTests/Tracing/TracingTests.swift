import CloakCrypto
import CloakService
import CloakTesting
import Foundation
import Testing

/// `telemetry.traces` on a real `cloak serve`: the OTLP/HTTP export received by a bare socket and
/// decoded as a collector would, the spans and their parents, `traceparent` on the way to an
/// upstream (Cloak's own, never the caller's), and not one sensitive byte in the export.
@Suite(.serialized, .tags(.racy, .processes, .sockets)) struct TracingTests {
    static let routeID = "7d1e2c1a-8c1f-4d0e-9d7a-1f0a2b3c4d5e"
    static let callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
    static let callerSpan = "00f067aa0ba902b7"
    static var callerParent: String { "00-\(callerTrace)-\(callerSpan)-01" }
    static let cards = ["4111111111111111", "5555555555554444", "4000056655665556"]

    static func node(collector: RawUpstream?, upstream: RawUpstream, directory: TemporaryDirectory) throws -> CloakNode
    {
        try CloakNode(store: "sqlite:\(directory.path)/cloak.db", directory: directory.path) { yaml in
            var yaml = yaml.replacingOccurrences(
                of: "\nroutes: []\n",
                with: """

                    routes:
                      - id: "\(routeID)"
                        path: /pay
                        upstream: "http://127.0.0.1:\(upstream.port)/charge"
                        methods: [POST]
                        request:
                          - {redact: {json: ["$.card"], format: UUID, storage: PERSISTENT}}

                    """)
            if let collector {
                yaml +=
                    "\ntelemetry:\n  traces: {endpoint: \"http://127.0.0.1:\(collector.port)\", sample_ratio: 1.0}\n"
            }
            return yaml
        }
    }

    @Test func spansReachTheCollectorWithTheirParentsAndNothingSensitive() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let collector = RawUpstream()
        defer { collector.stop() }
        let upstream = RawUpstream()
        defer { upstream.stop() }
        let node = try Self.node(collector: collector, upstream: upstream, directory: directory)
        defer { node.stop() }
        let auth = ("Authorization", "Bearer \(CloakNode.token)")

        // A token holder's trace is continued: the request span's parent is the caller's span.
        let created = try node.client().request(
            "POST", "/aliases",
            json:
                #"{"data":[{"value":"\#(Self.cards[0])","format":"UUID"},{"value":"\#(Self.cards[1])","format":"FPE_SIX_T_FOUR"}]}"#,
            headers: [auth, ("traceparent", Self.callerParent)])
        #expect(created.status == 201)
        let aliases = ((created.json?["data"] as? [[String: Any]]) ?? []).compactMap {
            (($0["aliases"] as? [[String: Any]])?.first?["alias"] as? String)
        }
        #expect(aliases.count == 2)
        // A reveal (the value comes back to the caller; never into a span).
        let revealed = try node.client().request("GET", "/aliases/\(aliases[0])", headers: [auth])
        #expect(revealed.status == 200)
        // An anonymous caller's traceparent starts nothing: a new trace.
        let anonymous = try node.client().request(
            "POST", "/tokens", json: #"{"data":[{"value":"\#(Self.cards[2])","format":"UUID"}]}"#,
            headers: [
                ("traceparent", "00-\(String(repeating: "ab", count: 16))-\(String(repeating: "cd", count: 8))-01")
            ])
        #expect(anonymous.status == 201)
        // Through an inbound route: the upstream gets Cloak's traceparent, in the caller's trace.
        let routed = try node.client().request(
            "POST", "/proxy/pay", json: #"{"card":"\#(Self.cards[0])","amount":100}"#,
            headers: [
                auth, ("traceparent", Self.callerParent), ("tracestate", "vendor=abc"),
                ("traceparent", Self.callerParent),
            ])
        #expect(routed.status == 204)

        #expect(Poll.until { upstream.text.contains("traceparent") })
        let sent = upstream.text.split(separator: "\r\n").filter { $0.lowercased().hasPrefix("traceparent:") }
        #expect(sent.count == 1, "one traceparent, Cloak's: \(sent)")
        let upstreamParent = sent.first.map { $0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces) } ?? ""
        #expect(upstreamParent.hasPrefix("00-\(Self.callerTrace)-"))
        #expect(!upstreamParent.contains(Self.callerSpan), "the caller's span id never goes upstream")
        // A trusted caller's tracestate goes on with its trace (W3C), once.
        let states = upstream.text.split(separator: "\r\n").filter { $0.lowercased().hasPrefix("tracestate:") }
        #expect(states.map { $0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces) } == ["vendor=abc"])

        // The export: request spans (by template), vault and upstream spans under them.
        // Every span the checks below read (one request's spans may leave in two exports).
        let wanted = ["POST /aliases", "vault create", "GET /aliases/{alias}", "POST /tokens", "POST /proxy/{path...}"]
        #expect(
            Poll.until {
                let names = Set(OTLPDecoding.spans(inHTTP: collector.bytes).map(\.name))
                return wanted.allSatisfy(names.contains) && names.contains("upstream POST")
            })
        let spans = OTLPDecoding.spans(inHTTP: collector.bytes)
        let create = try #require(spans.first { $0.name == "POST /aliases" })
        #expect(create.traceID == Self.callerTrace && create.parentSpanID == Self.callerSpan)
        #expect(create.attributes["http.response.status_code"] == "201")
        let vaultCreate = try #require(spans.first { $0.name == "vault create" && $0.traceID == Self.callerTrace })
        #expect(vaultCreate.parentSpanID == create.spanID && vaultCreate.attributes["cloak.vault.items"] == "2")
        let reveal = try #require(spans.first { $0.name == "GET /aliases/{alias}" })
        #expect(reveal.parentSpanID.isEmpty || reveal.parentSpanID == String(repeating: "0", count: 16))
        let tokens = try #require(spans.first { $0.name == "POST /tokens" })
        #expect(tokens.traceID != String(repeating: "ab", count: 16), "an anonymous caller's trace is not continued")
        let proxy = try #require(spans.first { $0.name == "POST /proxy/{path...}" })
        #expect(proxy.traceID == Self.callerTrace)
        let exchange = try #require(spans.first { $0.name == "upstream POST" })
        #expect(exchange.parentSpanID == proxy.spanID && exchange.attributes["server.address"] == "127.0.0.1")
        #expect(upstreamParent == "00-\(Self.callerTrace)-\(exchange.spanID)-01")
        #expect(exchange.attributes["http.response.status_code"] == "204")

        // Not one sensitive byte in the whole export: values, aliases, the token, the key.
        let export = collector.bytes
        for secret in Self.cards + aliases + [CloakNode.token, CloakNode.masterKey] {
            #expect(export.firstRange(of: Array(secret.utf8)) == nil, "\(secret.prefix(4))… in the export")
        }
        // The access log carries the ids.
        node.stop()
        #expect(node.log.contains(#""trace_id":"\#(Self.callerTrace)""#))
    }

    /// The span's code is the error Cloak answered with (issue 44, item 9), carried in the request
    /// context: an upstream's answer passed through has none, however much its body looks like a
    /// VGSError; Cloak's own errors, answered later (a reveal's 404) or at once with headers of
    /// their own (a 405's `Allow`), have theirs.
    @Test func theErrorCodeIsCloaksErrorNeverAnUpstreamsBody() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let collector = RawUpstream()
        defer { collector.stop() }
        let body = #"{"error":{"domain":"vgscollect.sdk","code":1500,"type":"vaultUnavailable","description":"x"}}"#
        let lookalike = CannedUpstream(
            answer: Array(
                ("HTTP/1.1 502 Bad Gateway\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)"
                    + "\r\nConnection: close\r\n\r\n" + body).utf8))
        defer { lookalike.stop() }
        let node = try CloakNode(store: "sqlite:\(directory.path)/cloak.db", directory: directory.path) { yaml in
            yaml.replacingOccurrences(
                of: "\nroutes: []\n",
                with: """

                    routes:
                      - id: "\(Self.routeID)"
                        path: /lookalike
                        upstream: "http://127.0.0.1:\(lookalike.port)/answer"

                    """)
                + "\ntelemetry:\n  traces: {endpoint: \"http://127.0.0.1:\(collector.port)\", sample_ratio: 1.0}\n"
        }
        defer { node.stop() }
        let auth = ("Authorization", "Bearer \(CloakNode.token)")
        func parent(_ n: Int) -> (trace: String, header: (String, String)) {
            let trace = "4bf92f3577b34da6a3ce929d0e0e47" + String(format: "%02x", n)
            return (trace, ("traceparent", "00-\(trace)-\(Self.callerSpan)-01"))
        }

        let passed = try node.client().request(
            "POST", "/proxy/lookalike", json: "{}", headers: [auth, parent(1).header])
        #expect(passed.status == 502 && passed.errorCode == 1500, "the upstream's answer, as it came")
        let missing = try node.client().request(
            "GET", "/aliases/tok_sandbox_2Ud9kF3pQwXyZ7LmN4bV8c", headers: [auth, parent(2).header])
        #expect(missing.status == 404)
        let refused = try node.client().request("PATCH", "/aliases", json: "{}", headers: [auth, parent(3).header])
        #expect(refused.status == 405 && refused.header("Allow") != nil)

        #expect(Poll.until { (1...3).allSatisfy { n in Self.serverSpan(parent(n).trace, collector) != nil } })
        let upstreamAnswer = try #require(Self.serverSpan(parent(1).trace, collector))
        #expect(upstreamAnswer.attributes["http.response.status_code"] == "502")
        #expect(upstreamAnswer.attributes["cloak.error.code"] == nil, "\(upstreamAnswer)")
        #expect(upstreamAnswer.statusCode != 2)
        let notFound = try #require(Self.serverSpan(parent(2).trace, collector))
        #expect(notFound.attributes["cloak.error.code"] == String(missing.errorCode ?? -1) && notFound.statusCode == 2)
        let notAllowed = try #require(Self.serverSpan(parent(3).trace, collector))
        #expect(notAllowed.attributes["cloak.error.code"] == "1405" && notAllowed.statusCode == 2)
    }

    /// The server span of the request in `trace`, once exported.
    static func serverSpan(_ trace: String, _ collector: RawUpstream) -> OTLPDecoding.Span? {
        OTLPDecoding.spans(inHTTP: collector.bytes).first { $0.traceID == trace && $0.kind == 2 }
    }

    @Test func withTracingOffNoConnectionLeavesTheNode() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let upstream = RawUpstream()
        defer { upstream.stop() }
        let node = try Self.node(collector: nil, upstream: upstream, directory: directory)
        defer { node.stop() }
        let auth = ("Authorization", "Bearer \(CloakNode.token)")
        for card in Self.cards {
            let r = try node.client().request(
                "POST", "/aliases", json: #"{"data":[{"value":"\#(card)","format":"UUID"}]}"#,
                headers: [auth, ("traceparent", Self.callerParent)])
            #expect(r.status == 201)
        }
        // Its only outgoing connections are to the route's upstream (none made here): the
        // process's sockets are its listener and accepted clients, all on its own port.
        let outgoing = Self.connectedRemotePorts(pid: node.pid).filter { $0.local != node.port }
        #expect(outgoing.isEmpty, "\(outgoing)")
        // A forwarded request carries no trace header at all.
        let routed = try node.client().request(
            "POST", "/proxy/pay", json: #"{"card":"\#(Self.cards[0])"}"#,
            headers: [auth, ("traceparent", Self.callerParent)])
        #expect(routed.status == 204)
        #expect(Poll.until { upstream.text.contains("POST /charge") })
        #expect(!upstream.text.lowercased().contains("traceparent"))
    }

    /// The local and remote ports of the process's connected TCP sockets (from /proc).
    static func connectedRemotePorts(pid: Int32) -> [(local: Int, remote: Int)] {
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
        let inodes = Set(
            fds.compactMap { fd -> String? in
                guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(fd)"),
                    target.hasPrefix("socket:[")
                else { return nil }
                return String(target.dropFirst(8).dropLast())
            })
        var out: [(Int, Int)] = []
        for table in ["/proc/\(pid)/net/tcp", "/proc/\(pid)/net/tcp6"] {
            guard let text = try? String(contentsOfFile: table, encoding: .utf8) else { continue }
            for line in text.split(separator: "\n").dropFirst() {
                let f = line.split(separator: " ", omittingEmptySubsequences: true)
                // State 01 = ESTABLISHED; field 9 is the inode.
                guard f.count > 9, f[3] == "01", inodes.contains(String(f[9])) else { continue }
                let local = Int(f[1].split(separator: ":")[1], radix: 16) ?? 0
                let remote = Int(f[2].split(separator: ":")[1], radix: 16) ?? 0
                out.append((local, remote))
            }
        }
        return out
    }
}
