import CloakCore
import CloakCrypto
import CloakHTTP
import CloakVault

/// `GET /admin/bins` and `POST /admin/bins/rollback` (scope `bins:admin`): the store's BIN
/// table, the one before it, what each node serves, and the rollback `cloak bins rollback --yes`
/// does. Imports stay a command (`cloak bins import`): a table is a file an operator has.
struct AdminBinsHandler: Sendable {
    let vault: Vault
    let refreshSeconds: Int
    let outcome: Outcome?
    let now: Int64

    private var key: HMACKey { vault.derivedMAC(purpose: BinTableDocument.purpose) }

    /// 200 `{"table": {version, sha256, rows, source, imported_at, age_s} | null, "verified",
    /// "previous": {"name", "rows"} | null, "nodes": [...]}`.
    func status() -> Reply {
        let (key, now, staleAfter) = (self.key, self.now, Int64(3 * refreshSeconds))
        return .later { finish in
            vault.withStore(reads: true) { store in
                let admin = BinTableAdministration(store: store, key: key)
                let found = try admin.status()
                let previous = try? admin.previousTable()
                return (found, previous.map { ($0.name, $0.table.rows.count) }, try admin.nodes())
            } completion: { result in
                guard case let .success((found, previous, nodes)) = result else {
                    return finish(.error(.storeUnavailable("the store could not be read")))
                }
                var table = JSONValue.null
                if let found, case var .object(members) = found.document.json {
                    members.append(("age_s", .int(Int(max(0, now - found.document.importedAt)))))
                    table = .object(members)
                }
                let listed = nodes.map { $0.json(now: now, current: found?.document, staleAfter: staleAfter) }
                finish(
                    .json(
                        200,
                        .object([
                            ("table", table), ("verified", .bool(found?.verified ?? false)),
                            (
                                "previous",
                                previous.map { .object([("name", .string($0.0)), ("rows", .int($0.1))]) } ?? .null
                            ),
                            ("nodes", .array(listed)),
                        ]), headers: HTTPResponse.noStoreHeaders))
            }
        }
    }

    /// `{"current_version": N}` → 200 with the new table's header: the table before the current
    /// one becomes the table again, as the next version. `current_version` names the table the
    /// operator saw replaced: when another import or rollback came first, nothing changes (400).
    func rollback(_ request: HTTPRequest) throws(CloakError) -> Reply {
        guard case let .object(members) = try request.jsonBody(), members.count == 1,
            members[0].key == "current_version", case let .number(text) = members[0].value,
            let seen = Int64(text)
        else { throw .malformed(#"the body must be {"current_version": N}: the version the rollback replaces"#) }
        let (key, now, outcome) = (self.key, self.now, self.outcome)
        return .later { finish in
            vault.withStore(reads: false) { store -> Result<BinTableDocument, CloakError> in
                let admin = BinTableAdministration(store: store, key: key)
                guard let found = try admin.status(), found.verified else {
                    return .failure(.malformed("no verified BIN table in the store to go back from"))
                }
                guard found.document.version == seen else {
                    return .failure(
                        .malformed("the current table is version \(found.document.version), not \(seen): look again"))
                }
                // Its explanations are the operator's to read; a store failure below is not.
                guard let previous = try? admin.previousTable() else {
                    return .failure(
                        .malformed(
                            "the store keeps no table before this one that this key ring signed for: import the one you want"
                        ))
                }
                return .success(try admin.rollback(to: previous, now: now))
            } completion: { result in
                switch result {
                case let .success(.success(document)):
                    outcome?.alias(
                        nil as String?, .ok, facts: [("from", String(seen)), ("version", String(document.version))])
                    finish(.json(200, document.json, headers: HTTPResponse.noStoreHeaders))
                case let .success(.failure(error)):
                    outcome?.alias(nil as String?, .refused, facts: [("from", String(seen))])
                    finish(.error(error))
                case .failure:
                    outcome?.alias(nil as String?, .failed, facts: [("from", String(seen))])
                    finish(.error(.storeUnavailable("the store failed; nothing was changed")))
                }
            }
        }
    }
}
