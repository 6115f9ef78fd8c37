import CloakCore
import CloakCrypto
import CloakHTTP

extension Route.Step {
    /// Runs `steps` in order on the request's final body and headers.
    static func apply(
        _ steps: [Route.Step], body: [UInt8], headers: [(name: String, value: String)]
    ) -> (body: [UInt8], headers: [(name: String, value: String)]) {
        var headers = headers
        for step in steps {
            switch step {
            case .digest(let header):
                let sha256 = Digest.sha256(body)
                headers.removeAll { $0.name.caseInsensitiveEquals(header.rawValue) }
                headers.append(
                    (
                        header.rawValue,
                        header == .contentDigest
                            ? ContentDigestHeader.contentDigest(sha256: sha256)
                            : ContentDigestHeader.digest(sha256: sha256)
                    ))
            }
        }
        return (body, headers)
    }
}
