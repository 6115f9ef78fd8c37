import CloakCore
import CloakCrypto
import CloakHTTP
import Foundation
import Logging
import Synchronization

extension CloakService {
    func egressHandler(_ identity: Identity) -> EgressHandler {
        EgressHandler(
            context: context, vault: vault, settings: configuration.egress, identity: identity, metrics: egressMetrics,
            authenticator: auth, admission: admission(for: identity),
            lookupValuesPerHour: identity.token?.lookupBucketLimit(default: configuration.limits.bucketValuesPerHour))
    }

    /// Decides a CONNECT on the forward-proxy door. The CONNECT passes the door's steps like any
    /// request there (identified from `Proxy-Authorization`, rate-limited, logged, counted);
    /// then: 503 while draining, 407 without valid credentials, 403 when no route the token may
    /// use goes to that host and port; otherwise a tunnel with a leaf certificate for the host.
    package func authorizeTunnel(_ connect: HTTPRequest, host: String, port: Int) -> TunnelDecision {
        var tokenID = "-"
        let decision = passTunnelDoor(connect) { context throws(CloakError) in
            tokenID = context.identity.token?.id ?? "-"
            return decideTunnel(identity: context.identity, host: host, port: port)
        }
        let status: Int
        switch decision {
        case .open: status = 200
        case let .refuse(response): status = response.status
        }
        egressMetrics.record(route: "-", status: status, revealed: 0)
        // One line per CONNECT: who asked, whether a tunnel opened (the host is a configured
        // upstream only when it did; otherwise it is the client's text and is not logged).
        context.logger.info(
            "egress tunnel",
            metadata: [
                "token_id": .string(tokenID), "status": .stringConvertible(status),
                "host": .string(status == 200 ? "\(host):\(port)" : "-"),
            ])
        return decision
    }

    private func decideTunnel(identity: Identity, host: String, port: Int) -> TunnelDecision {
        if state.isDraining.load(ordering: .relaxed) {
            return .refuse(.error(CloakError(.tooManyConnections, "the server is shutting down")))
        }
        guard let token = identity.token else { return .refuse(EgressHandler.proxyAuthenticationRequired(identity)) }
        guard egressHandler(identity).mayTunnel(host: host, port: port) else {
            return .refuse(
                .error(CloakError(.forbidden, "no egress route this token may use goes to this host and port")))
        }
        guard let certificates = egressCertificates, let certificate = certificates.context(for: host) else {
            return .refuse(.error(CloakError(.unexpectedResponseType, "no certificate can be made for this host")))
        }
        return .open(grant: TunnelGrant.make(token), certificate: certificate)
    }
}

/// The forward-proxy door's leaf certificates, one per host of the configured egress routes,
/// made at start (a CONNECT only looks one up; a host whose certificate cannot be made is
/// logged at start and refused with 502 1400).
final class EgressCertificates: Sendable {
    private let contexts: [String: TLSServerContext]
    /// Hosts whose certificate could not be made, and why (no key material in either).
    let failures: [(host: String, reason: String)]

    init(_ authority: CertificateAuthority, hosts: [String]) {
        var contexts: [String: TLSServerContext] = [:]
        var failures: [(host: String, reason: String)] = []
        for host in Set(hosts) {
            do {
                let leaf = try authority.issue(host: host)
                contexts[host] = try TLSServerContext(
                    certificateChainPEM: leaf.certificateChainPEM, privateKeyPEM: leaf.privateKeyPEM)
            } catch {
                failures.append((host, "\(error)"))
            }
        }
        self.contexts = contexts
        self.failures = failures.sorted { $0.host < $1.host }
    }

    func context(for host: String) -> TLSServerContext? { contexts[host] }
}
