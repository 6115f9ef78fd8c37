import CloakTesting
import Foundation
import Testing

@testable import CloakHTTP

/// The request parser against h11 (PyPI, pinned by `scripts/test-python`), a strict HTTP/1.1
/// parser written apart from Cloak, on the framing corpus and the parser's own inputs: both
/// accept or both refuse, and where both accept they find the same messages (method, target,
/// body length). Where they differ, Cloak is the stricter one, and each such input is listed
/// with the rule that refuses it.
@Suite(
    .enabled(
        if: ProcessInfo.processInfo.environment["CLOAK_TEST_PYTHON"] != nil,
        "needs CLOAK_TEST_PYTHON (scripts/test sets it from scripts/test-python)"),
    .tags(.python))
struct RequestParserDifferentialTests {
    struct Message: Equatable, CustomStringConvertible {
        var method: String
        var target: String
        var body: Int
        var description: String { "\(method) \(target) (\(body))" }
    }

    struct Outcome: Equatable, CustomStringConvertible {
        var messages: [Message]
        /// `ok`, `refused` or `tunnel`.
        var verdict: String
        var description: String { "\(verdict) \(messages)" }
    }

    static let script = #"""
        import json, sys
        import h11

        def read(data):
            conn = h11.Connection(h11.SERVER)
            conn.receive_data(data)  # the connection stays open: an unfinished message is no error yet
            messages, current = [], None
            try:
                while True:
                    event = conn.next_event()
                    if event is h11.NEED_DATA:
                        return {"messages": messages, "verdict": "ok"}
                    if event is h11.PAUSED:
                        if current is not None and current["method"] == "CONNECT":
                            messages.append(current)
                            return {"messages": messages, "verdict": "tunnel"}
                        if conn.our_state is h11.MUST_CLOSE or conn.their_state is h11.MUST_CLOSE:
                            return {"messages": messages, "verdict": "ok"}
                        conn.start_next_cycle()
                        continue
                    if isinstance(event, h11.Request):
                        current = {"method": event.method.decode("latin-1"), "target": event.target.decode("latin-1"), "body": 0}
                        if event.method == b"CONNECT":
                            messages.append(current)
                            return {"messages": messages, "verdict": "tunnel"}
                    elif isinstance(event, h11.Data):
                        current["body"] += len(event.data)
                    elif isinstance(event, h11.EndOfMessage):
                        messages.append(current)
                        current = None
                        conn.send(h11.Response(status_code=200, headers=[("Content-Length", "0")]))
                        conn.send(h11.EndOfMessage())
                        if conn.our_state is h11.MUST_CLOSE:
                            return {"messages": messages, "verdict": "ok"}
                        conn.start_next_cycle()
                    elif isinstance(event, h11.ConnectionClosed):
                        return {"messages": messages, "verdict": "ok"}
            except h11.RemoteProtocolError as error:
                return {"messages": messages, "verdict": "refused", "why": str(error)}

        print(json.dumps([read(open(path, "rb").read()) for path in sys.argv[1:]]))
        """#

    /// What h11 reads of each input.
    static func h11(_ inputs: [[UInt8]]) throws -> [Outcome] {
        let list = try #require(try TestPython.run(Self.script, inputs: inputs) as? [[String: Any]])
        return list.map { item in
            Outcome(
                messages: (item["messages"] as? [[String: Any]] ?? []).map {
                    Message(
                        method: $0["method"] as? String ?? "", target: $0["target"] as? String ?? "",
                        body: $0["body"] as? Int ?? -1)
                }, verdict: item["verdict"] as? String ?? "?")
        }
    }

    /// What the parser reads of `input`, in the same terms.
    static func cloak(_ input: [UInt8], afterConnect: RequestFraming.AfterConnect) -> Outcome {
        let reading = RequestParserTests.read(input, afterConnect: afterConnect)
        var messages: [Message] = []
        for (k, head) in reading.heads.enumerated()
        where k < reading.ends || (reading.tunnel && head.method == "CONNECT") {
            messages.append(
                Message(
                    method: head.method, target: head.target,
                    body: k < reading.bodies.count ? reading.bodies[k].count : 0))
        }
        let verdict = reading.violation != nil ? "refused" : reading.tunnel ? "tunnel" : "ok"
        return Outcome(messages: messages, verdict: verdict)
    }

    /// Inputs h11 accepts and Cloak refuses, and the rule (RFC 9112 allows leniency in each;
    /// Cloak refuses what a front proxy might frame differently).
    static let cloakStricter: [String: String] = [
        "bare LF in the request line": "lines end in CRLF",
        "bare LF in a header": "lines end in CRLF",
        "bare LF ending the head": "lines end in CRLF",
        "a trailer ended by a bare LF": "lines end in CRLF",
        "an empty trailer line ended by a bare LF": "lines end in CRLF",
        "chunk extension with a bare CR": "a CR is followed by LF",
        "bare CR ending the head": "a CR is followed by LF",
        "Content-Length of 19 digits": "Content-Length is 1 to 18 digits",
        "Content-Length 4,4": "Content-Length is digits only (no list)",
        "a Content-Length line longer than the buffer": "framing fields are short",
        "Transfer-Encoding after a leading HTAB (evhttp would not read it as chunked)": "chunked exactly",
        "Transfer-Encoding in HTTP/1.0": "no Transfer-Encoding before HTTP/1.1",
        "Content-Length in a trailer": "no framing fields in trailers",
        "Transfer-Encoding in a trailer": "no framing fields in trailers",
        "obs-fold in a trailer": "no obs-fold",
        "chunk line too long": "chunk size lines are short",
        "chunk size of 17 digits": "a chunk size is 1 to 16 hex digits",
        "chunk size with a trailing space": "nothing but digits before the extensions",
    ]

    /// Inputs Cloak accepts and h11 refuses, and why Cloak accepts them.
    static let h11Stricter: [String: String] = [
        "leading CRLF before a request line": "RFC 9112 2.2: a server should ignore an empty line before a request line"
    ]

    @Test func bothParsersReadTheCorpusAlike() throws {
        let cases = RequestFramingTests.corpus
        let theirs = try Self.h11(cases.map(\.input))
        var differences: [String: String] = [:]
        for (item, their) in zip(cases, theirs) {
            // A CONNECT is handed to a tunnel by both (h11 stops at its head).
            let ours = Self.cloak(item.input, afterConnect: .passThrough)
            if ours == their { continue }
            if ours.verdict == "refused" && their.verdict != "refused" {
                differences[item.name] = "cloak refuses"
                continue
            }
            if ours.verdict != "refused" && their.verdict == "refused" {
                differences[item.name] = "h11 refuses"
                continue
            }
            if ours.verdict == "refused" && their.verdict == "refused" {
                // Both refuse: Cloak must not have found a request h11 did not (a desync).
                #expect(their.messages.starts(with: ours.messages), "\(item.name): cloak \(ours), h11 \(their)")
                continue
            }
            Issue.record("\(item.name): cloak \(ours), h11 \(their)")
        }
        let expected =
            Self.cloakStricter.mapValues { _ in "cloak refuses" }.merging(
                Self.h11Stricter.mapValues { _ in "h11 refuses" }
            ) { a, _ in a }
        #expect(differences == expected, "\(differences.sorted { $0.key < $1.key })")
    }

    @Test func pipelinedRequestsWithChunksAndTrailersReadAlike() throws {
        // Without its leading empty line, which h11 refuses (above).
        let input = Array(RequestParserTests.pipelined.dropFirst(2))
        let theirs = try #require(try Self.h11([input]).first)
        let ours = Self.cloak(input, afterConnect: .passThrough)
        #expect(ours == theirs && ours.messages.count == 4, "cloak \(ours), h11 \(theirs)")
    }
}
