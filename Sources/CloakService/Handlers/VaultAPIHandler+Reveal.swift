import CloakCore
import CloakHTTP
import CloakVault
import Foundation

extension VaultAPIHandler {
    /// `GET /aliases/{alias}`: the record for `aliases:reveal`; for a token with `bins:read`
    /// alone, the card attributes the record keeps (issue 48), never its value.
    func reveal(_ request: HTTPRequest, alias: String) throws(CloakError) -> Reply {
        try Self.requirePlausible(alias, outcome)
        if identity.token?.scopes.contains(.aliasesReveal) != true {
            // A card's attributes are not judged by access policies yet (issue 77).
            if identity.token?.access.isRestricted == true {
                throw CloakError(
                    .forbidden, "this token is held to access policies, which card attributes do not apply yet")
            }
            return attributesOnly(alias)
        }
        let judge = judging(request)
        return .later { finish in
            // An alias that does not exist is a guess (an FPE alias keeps its card's BIN and last four).
            vault.revealGuessing([alias], judge: judge) { result in
                switch result {
                case let .success(found):
                    // Each alias's event committed with the reveal (``VaultAuditing``).
                    if let record = found[alias] {
                        finish(
                            .json(
                                200, Self.dataArray([record], lifecycle: true), headers: HTTPResponse.noStoreHeaders))
                    } else {
                        finish(.error(.notFound("no such alias")))
                    }
                case let .failure(error):
                    audit(alias, .error)
                    finish(.error(error.cloakError { _ in "alias" }))
                }
            }
        }
    }

    /// `{"attributes": {…}}` of the record an alias names (404 when it keeps none).
    private func attributesOnly(_ alias: String) -> Reply {
        // Noted here, with what was shown (attributes or nothing), not as a reveal.
        var unaudited = self.vault
        unaudited.audit = nil
        let vault = unaudited
        return .later { finish in
            vault.revealGuessing([alias]) { result in
                switch result {
                case let .success(found):
                    // Recomputed from the sealed value (the metadata is not sealed: a database
                    // writer could change it), by the digits an alias shows: what is stored was
                    // looked up by up to eight, and this caller may not reveal.
                    let record = found[alias]
                    let attributes = vault.bins.flatMap { table in
                        record.flatMap {
                            CardAttributes.ofCard($0.value, in: table, shownDigits: CardAttributes.aliasShownDigits)
                        }
                    }
                    guard let attributes else {
                        audit(alias, .notFound)
                        return finish(.error(.notFound("no card attributes are kept for this alias")))
                    }
                    audit(alias, .attributes)
                    finish(
                        .json(
                            200, JSONWriter.encode(.object([("attributes", attributes.json)])),
                            headers: HTTPResponse.noStoreHeaders))
                case let .failure(error):
                    audit(alias, .error)
                    finish(.error(error.cloakError { _ in "alias" }))
                }
            }
        }
    }

    /// `GET /aliases?q=a,b`: each alias costs one request of the token's rate, and aliases not
    /// found count as guesses in their buckets (``VaultClient/revealGuessing(_:completion:)``).
    func revealMany(_ request: HTTPRequest) throws(CloakError) -> Reply {
        // Split on literal commas first, then decode each alias: an alias holding a comma is
        // asked for as %2C.
        var seen = Set<String>()
        let aliases =
            (Self.rawQueryValue(request.query, "q").map { raw in
                raw.split(separator: ",").map { Self.decodeQueryComponent($0) ?? "" }
            } ?? []).filter { seen.insert($0).inserted }  // one answer (and one audit line) per alias
        guard !aliases.isEmpty else { throw .malformed("give the aliases to reveal as ?q=alias1,alias2") }
        guard aliases.count <= vault.settings.maxBatch else {
            throw .malformed("at most \(vault.settings.maxBatch) aliases at once, not \(aliases.count)")
        }
        let plausible = aliases.filter(Self.isPlausibleAlias)
        let judge = judging(request)
        return .later { finish in
            vault.revealGuessing(plausible, judge: judge) { result in
                switch result {
                case let .success(found):
                    // The vault noted those it was asked; an alias that cannot name one was not asked.
                    for alias in aliases where !Self.isPlausibleAlias(alias) { audit(alias, .notFound) }
                    guard !found.isEmpty else { return finish(.error(.notFound("none of the aliases exists"))) }
                    var answer = JSONWriter(reservingCapacity: 192 * found.count + 16)
                    answer.beginObject()
                    answer.key("data" as StaticString)
                    answer.beginObject()
                    for alias in aliases {
                        guard let record = found[alias] else { continue }
                        answer.key(alias)
                        record.write(into: &answer, lifecycle: true)
                    }
                    answer.endObject()
                    answer.endObject()
                    finish(.json(200, answer.takeBytes(), headers: HTTPResponse.noStoreHeaders))
                case let .failure(error):
                    finish(.error(error.cloakError { _ in "alias" }))
                }
            }
        }
    }

    /// What the token's access policies let it see of each record a reveal finds (issue 77), or
    /// nil for a token held to none. Judged inside the reveal's job: what a policy changed is an
    /// event that commits with the reveal's own, and a hidden value counts as a miss.
    private func judging(_ request: HTTPRequest) -> RevealJudge? {
        guard let access = identity.token?.access, access.isRestricted else { return nil }
        let policies = PolicyReveal(
            access: access, request: request, tokenID: outcome?.tokenID ?? identity.token?.id ?? "-",
            client: outcome?.client ?? request.remoteAddress)
        return { alias, reference, record in policies.judge(record, alias: alias, reference: reference) }
    }

    /// The still-encoded value of a query parameter.
    static func rawQueryValue(_ query: String?, _ name: String) -> Substring? {
        guard let query else { return nil }
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            if parts.first == Substring(name) { return parts.count > 1 ? parts[1] : "" }
        }
        return nil
    }

    /// A query component decoded (`+` is a space); nil for invalid percent-encoding.
    static func decodeQueryComponent(_ raw: Substring) -> String? {
        raw.replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }
}
