import CloakService

/// Tests spell scopes as they are configured (`"aliases:create"`); the service itself names
/// them only as ``Scope``'s members.
extension Scope: ExpressibleByStringLiteral {
    public init(stringLiteral text: String) { self.init(stored: text) }
}
