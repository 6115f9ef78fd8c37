import CloakCore
import CloakHTTP
import Foundation

/// What goes upstream: an inbound route's request looked at for cards no selector took
/// (`unselected_cards`), and refused, redacted or let through as the route says.
extension RouteExchange {
    /// Sends the request, once no card is left in it that no selector took (an inbound route's
    /// `unselected_cards`): what is card-shaped and not the route's own writing is asked of the
    /// vault first (its aliases are not cards).
    mutating func forward(
        _ body: [UInt8], _ headers: [(name: String, value: String)], _ outcome: Outcome, _ revealed: RevealedValues
    ) -> Action {
        if let inbound = plan.inbound, inbound.unselectedCards != .allow {
            let mode = inbound.unselectedCards
            if let why = Self.unreadable(body, headers) {
                return fail(
                    .malformed(
                        "route \(routeID) looks for card numbers in what it forwards, and \(why) "
                            + "(routes[].unselected_cards: \(mode.rawValue))"), outcome)
            }
            let kind = SelectableBody.of(headers).kind
            let findings =
                (CardScan.body(body, kind: kind, skipping: Set(produced)) + CardScan.headers(headers)
                + CardScan.pairs(Array(inbound.query.utf8), prefix: "query")
                + CardScan.cards(in: CardScan.lenientDecode(Array(inbound.path.utf8)[...])).map {
                    CardScan.Finding(place: "path", text: String($0), whole: false)
                })
                .filter { finding in !produced.contains { $0.contains(finding.text.value) } }
            if !findings.isEmpty {
                var asked = Set<String>()
                let values = findings.map(\.text.value).filter { asked.insert($0).inserted }
                guard values.count <= plan.maxSelected else {
                    return fail(
                        .malformed(
                            "route \(routeID) would forward \(values.count) card-shaped values no selector took; "
                                + "at most \(plan.maxSelected) are looked up (\(plan.limitName))"), outcome)
                }
                guard plan.hasVault else { return decide(findings, body, headers, outcome, revealed) }
                state = .checkingCards(body: body, headers: headers, outcome, revealed, findings)
                return .checkAliases(values)
            }
        }
        state = .awaitingAnswer(outcome, revealed)
        return .send(body: body, headers: readable(headers, revealed))
    }

    /// Why a body cannot be looked at for cards, or nil: an encoding (gzip would hide them), two
    /// `Content-Type` headers (the upstream may read either), or a charset other than UTF-8.
    static func unreadable(_ body: [UInt8], _ headers: [(name: String, value: String)]) -> String? {
        guard !body.isEmpty else { return nil }
        var types = 0
        var charset: String?
        for header in headers {
            if header.name.caseInsensitiveEquals("Content-Encoding"), !Self.isIdentity(header.value) {
                return "an encoded body (Content-Encoding) cannot be read"
            }
            guard header.name.caseInsensitiveEquals("Content-Type") else { continue }
            types += 1
            // `; charset=…` (rare): read without Foundation, on every forwarded request.
            guard header.value.utf8.contains(UInt8(ascii: ";")) else { continue }
            for parameter in header.value.split(separator: ";").dropFirst() {
                let pair = parameter.split(separator: "=", maxSplits: 1)
                guard pair.count == 2, pair[0].filter({ $0 != " " }).lowercased() == "charset" else { continue }
                charset = pair[1].filter { $0 != " " && $0 != "\"" }.lowercased()
            }
        }
        if types > 1 { return "the body has \(types) Content-Type headers" }
        if let charset, !["utf-8", "utf8", "us-ascii"].contains(charset) {
            return "its charset is \(charset), not UTF-8"
        }
        return nil
    }

    /// Whether a `Content-Encoding` value is `identity` (spaces around it aside).
    static func isIdentity(_ value: String) -> Bool {
        value.utf8.filter { $0 != 0x20 && $0 != 0x09 }.map { $0 | 0x20 }.elementsEqual("identity".utf8)
    }

    /// What becomes of the request once `cards` are known not to be aliases: sent when there are
    /// none; redacted once where the route says so and every one can be selected; else refused.
    mutating func decide(
        _ cards: [CardScan.Finding], _ body: [UInt8], _ headers: [(name: String, value: String)],
        _ outcome: Outcome, _ revealed: RevealedValues
    ) -> Action {
        guard !cards.isEmpty else {
            state = .awaitingAnswer(outcome, revealed)
            return .send(body: body, headers: readable(headers, revealed))
        }
        if plan.inbound?.unselectedCards == .redact, plan.hasVault, !redactedUnselected,
            let operations = Self.redaction(of: cards)
        {
            redactedUnselected = true
            let selection: MessageSelection
            do { selection = try MessageSelection(body: body, headers: headers, operations: operations) } catch {
                return fail(error, outcome)
            }
            var more = outcome
            more.redacted += selection.redactCount
            state = .transformingRequest(selection, body: body, headers: headers, more)
            return .transform(selection, .request)
        }
        var places: [String] = []
        for card in cards where !places.contains(card.place) { places.append(card.place) }
        return fail(
            CloakError(
                .inputDataIsNotValid,
                "route \(routeID) would forward a card number that no selector took, at "
                    + places.joined(separator: ", ")
                    + " (routes[].unselected_cards: refuse; select it to redact it, or fix the selector)",
                extraInfo: [("route", .string(routeID)), ("paths", .array(places.map { .string($0) }))]),
            outcome)
    }

    /// Operations that alias each of `cards` where it is (a card alone: FPE_T_FOUR, keeping its
    /// length and last four; in a longer text: the text as a UUID alias); nil when one is where
    /// no selector reaches (the query, a key, a body of another type).
    static func redaction(of cards: [CardScan.Finding]) -> [Route.Operation]? {
        var whole = Route.Operation(format: .FPE_T_FOUR, storage: .persistent, json: [], form: [], header: [])
        var texts = Route.Operation(format: .UUID, storage: .persistent, json: [], form: [], header: [])
        for card in cards {
            if card.place.hasPrefix("$"), !card.place.contains("['<card>']"), let path = try? JSONPath(card.place) {
                if card.whole { whole.json.append(path) } else { texts.json.append(path) }
            } else if card.place.hasPrefix("form:"), !card.place.hasSuffix(":<card>") {
                let key = String(card.place.dropFirst(5))
                if card.whole { whole.form.append(key) } else { texts.form.append(key) }
            } else if card.place.hasPrefix("header:") {
                let name = String(card.place.dropFirst(7))
                if card.whole { whole.header.append(name) } else { texts.header.append(name) }
            } else {
                return nil
            }
        }
        return [whole, texts].filter { !$0.json.isEmpty || !$0.form.isEmpty || !$0.header.isEmpty }
    }
}
