import CloakCore
import CloakHTTP
import CloakVault
import Foundation

/// `GET /admin/overview` and `GET /admin/files` (any console scope, ``Scope/console``): what the
/// nodes say of themselves, for the console's overview and files pages. Names, counts and
/// versions only: never a value, an alias, a secret or a store URL.
struct AdminNodeHandler: Sendable {
    unowned let service: CloakService
    let now: Int64

    /// 200 `{"node": {…this node…}, "nodes": [{node, version, sha256, adopted_at, seen_s_ago,
    /// current, stale, status}], "configuration": {forms, routes, egress_routes}}`: every node's
    /// heartbeat (written every `bins.refresh_s`) beside this node's own status, read now.
    func overview() -> Reply {
        let service = self.service
        let now = self.now
        var members = [("name", JSONValue.string(service.binRefresh?.node ?? "-"))]
        if case let .object(status) = service.nodeStatus(now: now) { members += status }
        let this = members
        let configuration = JSONValue.object([
            ("forms", .int(service.configuration.forms.count)), ("routes", .int(service.configuration.routes.count)),
            ("egress_routes", .int(service.configuration.egress.routes.count)),
        ])
        guard let vault = service.vault, let refresh = service.binRefresh else {
            return .now(
                .json(
                    200, .object([("node", .object(this)), ("nodes", .array([])), ("configuration", configuration)]),
                    headers: HTTPResponse.noStoreHeaders))
        }
        let key = vault.derivedMAC(purpose: BinTableDocument.purpose)
        let staleAfter = Int64(3 * service.configuration.binsRefreshSeconds)
        let current = refresh.current?.document
        return .later { finish in
            vault.withStore(reads: true) { store in
                try BinTableAdministration(store: store, key: key).nodes()
            } completion: { result in
                guard case let .success(nodes) = result else {
                    return finish(.error(.storeUnavailable("the store could not be read")))
                }
                let listed = nodes.map { $0.json(now: now, current: current, staleAfter: staleAfter) }
                finish(
                    .json(
                        200,
                        .object([("node", .object(this)), ("nodes", .array(listed)), ("configuration", configuration)]),
                        headers: HTTPResponse.noStoreHeaders))
            }
        }
    }

    /// 200 `{"uploads": {"stored", "refused", "failed"}, "stored_bytes", "reveals",
    /// "revealed_bytes", "unfinished"}`: this node's file traffic since start (its metrics), and
    /// the uploads it is receiving now. Each node counts its own; the console names the node.
    func files() -> Reply {
        let registry = service.metrics.registry
        let uploads = registry.values("cloak_files_uploads_total")
        func outcome(_ name: String) -> JSONValue { .int(uploads["{outcome=\"\(name)\"}"] ?? 0) }
        func total(_ name: String) -> JSONValue { .int(registry.values(name).values.reduce(0, +)) }
        return .now(
            .json(
                200,
                .object([
                    ("node", .string(service.binRefresh?.node ?? "-")),
                    (
                        "uploads",
                        .object([
                            ("stored", outcome("stored")), ("refused", outcome("refused")),
                            ("failed", outcome("failed")),
                        ])
                    ),
                    ("stored_bytes", total("cloak_files_stored_bytes_total")),
                    ("reveals", total("cloak_files_reveals_total")),
                    ("revealed_bytes", total("cloak_files_revealed_bytes_total")),
                    ("unfinished", .int(service.state.uploads.inProgress)),
                    (
                        "forms_with_files",
                        .strings(service.configuration.forms.values.filter(\.hasFileFields).map(\.name).sorted())
                    ),
                ]),
                headers: HTTPResponse.noStoreHeaders))
    }
}
