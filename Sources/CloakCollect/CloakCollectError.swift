/// What went wrong, as a stable `code` and a `message` for people. Neither ever holds a value a
/// user typed or a revealed value.
///
/// Codes: `unknown_field`, `not_a_text_field` (``CloakCollect/field(_:)`` on a file field),
/// `not_a_file_field` (``CloakCollect/fileField(_:)`` on a text field), `schema_not_loaded`,
/// `schema_invalid`, `insecure_server`, `invalid_extra_data`, `no_answer` (the server could not
/// be reached or did not answer), and for a reveal the server's refusal (`expired`,
/// `invalid_session`, `wrong_audience`, `other_client`, `not_in_session`, `token_revoked`,
/// `not_found`, or `http_<status>`).
public struct CloakCollectError: Error, Sendable, Equatable, CustomStringConvertible {
    public let code: String
    public let message: String

    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "CloakCollectError(\(code)): \(message)" }
}
