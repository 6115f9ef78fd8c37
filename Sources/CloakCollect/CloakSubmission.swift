import CloakCore

/// Where a submission goes: each posts the VGS collect body to the form's endpoint.
public enum CloakSubmission: Sendable, Equatable {
    /// `POST /forms/{form}/validate`: the server's field states; nothing is stored.
    case validate
    /// `POST /forms/{form}/tokens`: the tokenize result (aliases of the tokenized fields).
    case tokens
    /// `POST /forms/{form}/send`: the redacted echo.
    case send
    /// `POST /proxy{path}`: the form through a Cloak route to your backend (`path` starts with `/`).
    case route(String)

    func path(form: String) throws(CloakCollectError) -> String {
        switch self {
        case .validate: return "/forms/\(form)/validate"
        case .tokens: return "/forms/\(form)/tokens"
        case .send: return "/forms/\(form)/send"
        case let .route(path):
            // A path of the route's own: no scheme, host, query, fragment or dot segment.
            guard path.hasPrefix("/"), !path.contains("?"), !path.contains("#"), !path.contains("\\"),
                !path.split(separator: "/").contains(where: { $0 == ".." || $0 == "." }),
                path.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F })
            else {
                throw CloakCollectError(
                    code: "invalid_route", message: "a route path starts with / and holds printable ASCII only")
            }
            return "/proxy" + path
        }
    }
}

/// `VGSCollectFieldNameMappingPolicy`: how field names become the outgoing JSON.
public typealias CloakMappingPolicy = MappingPolicy
