import CloakCore
import CloakHTTP
import CloakVault

/// Card attributes from the node's BIN table (issue 48), scope `bins:read`:
/// - `GET /bins/{digits}`: 6 to 11 digits, never a whole card number; the attributes of the most
///   specific range, or 404;
/// - `POST /cards/attributes` with `{"alias": …}`: the attributes of the card an alias stands
///   for, read inside the vault (the answer holds no digit of it), for backends that hold
///   aliases, not cards.
struct BinsHandler: Sendable {
    let table: BinTable?
    let vault: VaultClient?
    /// The audit of `POST /cards/attributes` (it decrypts a record, as a reveal does).
    var outcome: Outcome? = nil
    /// Whether the caller may reveal aliases: one who may not gets a card's attributes by the
    /// digits an alias shows (``CardAttributes/aliasShownDigits``), never by more.
    var mayReveal = false

    static let shortestQuery = 6
    static let longestQuery = 11

    func lookup(_ digits: String) throws(CloakError) -> Reply {
        let bytes = Array(digits.utf8)
        guard (Self.shortestQuery...Self.longestQuery).contains(bytes.count),
            bytes.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
        else {
            throw .malformed("give 6 to 11 digits of a card number (its BIN), never the whole number")
        }
        return .now(try answer(table, bytes))
    }

    func attributes(_ request: HTTPRequest) throws(CloakError) -> Reply {
        try request.requireJSONContentType()
        guard case .object(let members) = try request.jsonBody(), members.count == 1,
            let alias = members.first(where: { $0.key == "alias" })?.value.stringValue
        else { throw .malformed("the body is {\"alias\": \"…\"}") }
        guard let vault else { throw CloakError(.vaultUnavailable, "this server runs without a vault") }
        guard VaultAPIHandler.isPlausibleAlias(alias) else { throw .notFound("no such alias") }
        let table = self.table
        let shownDigits = mayReveal ? 8 : CardAttributes.aliasShownDigits
        return .later { finish in
            // An alias that does not exist is a guess, as for a reveal.
            vault.revealGuessing([alias]) { result in
                switch result {
                case .failure(let error): finish(.error(error.cloakError { _ in "alias" }))
                case .success(let found):
                    guard let record = found[alias] else {
                        outcome?.alias(nil, .notFound)
                        return finish(.error(.notFound("no such alias")))
                    }
                    outcome?.alias(vault.vault.auditReference(alias), .ok)
                    // Only a card's, by the BIN a state shows: never a prefix of another secret.
                    guard let table else {
                        return finish(.error(.notFound("no BIN table is loaded (cloak bins import)")))
                    }
                    guard let attributes = CardAttributes.ofCard(record.value, in: table, shownDigits: shownDigits)
                    else {
                        return finish(.error(.notFound("the alias is not a card's a range of the BIN table holds")))
                    }
                    finish(.json(200, JSONWriter.encode(attributes.json), headers: HTTPResponse.noStoreHeaders))
                }
            }
        }
    }

    private func answer(_ table: BinTable?, _ digits: [UInt8]) throws(CloakError) -> HTTPResponse {
        guard let table else { throw .notFound("no BIN table is loaded (cloak bins import)") }
        guard let attributes = table.lookup(digits) else { throw .notFound("no range of the BIN table holds it") }
        return .json(200, JSONWriter.encode(attributes.json), headers: HTTPResponse.noStoreHeaders)
    }
}
