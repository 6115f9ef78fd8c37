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
            lookupValuesPerHour: identity.token?.lookupBucketLimit(default: configuration.limits.bucketValuesPerHour),
            bins: binRefresh?.current?.table)
    }

    /// Decides a CONNECT on the forward-proxy door. The CONNECT passes the door's steps like any
    /// request there (identified from `Proxy-Authorization`, rate-limited, logged, counted);
    /// then: 503 while draining, 407 without valid credentials, 403 when no route the token may
    /// use goes to that host and port; otherwise a tunnel with a leaf certificate for the host.
    package func authorizeTunnel(_ connect: HTTPRequest, host: String, port: Int) -> TunnelDecision {
        var tokenID = "-"
        let decision = passTunnelDoor(connect) { (context: inout RequestContext) throws(CloakError) in
            tokenID = context.identity.token?.id ?? "-"
            return decideTunnel(&context, host: host, port: port)
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

    /// A tunnel for the CONNECT's caller, or the refusal, its error noted in `context` (the
    /// span's code): 503 while draining, 407 without credentials, 403 when no route of the
    /// token's goes there, 502 without a certificate for the host.
    private func decideTunnel(_ context: inout RequestContext, host: String, port: Int) -> TunnelDecision {
        let refusal: Reply.Failure
        if state.isDraining.load(ordering: .relaxed) {
            refusal = .error(CloakError(.tooManyConnections, "the server is shutting down"))
        } else if let token = context.identity.token {
            if !egressHandler(context.identity).mayTunnel(host: host, port: port) {
                refusal = .error(
                    CloakError(.forbidden, "no egress route this token may use goes to this host and port"))
            } else if let certificate = egressCertificates?.context(for: host) {
                return .open(grant: TunnelGrant.make(token), certificate: certificate)
            } else {
                refusal = .error(CloakError(.unexpectedResponseType, "no certificate can be made for this host"))
            }
        } else {
            refusal = EgressHandler.proxyAuthenticationRequired(context.identity)
        }
        context.error = refusal.error
        return .refuse(refusal.response)
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
