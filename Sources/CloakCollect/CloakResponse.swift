import Foundation

/// An HTTP answer from Cloak, whatever its status: a 422 or a 429 is an answer (its body is a
/// VGSError-style JSON document); only no answer at all throws.
public struct CloakResponse: Sendable, Equatable {
    public let status: Int
    public let body: Data

    public init(status: Int, body: Data) {
        self.status = status
        self.body = body
    }

    /// The body as JSON, when it is JSON.
    public var json: Any? { try? JSONSerialization.jsonObject(with: body) }

    /// The error body's `error.code` (1001, 1002, …), when the answer is one.
    public var errorCode: Int? { ((json as? [String: Any])?["error"] as? [String: Any])?["code"] as? Int }
}
