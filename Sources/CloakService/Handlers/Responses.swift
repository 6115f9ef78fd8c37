import CloakCore
import CloakHTTP

extension HTTPResponse {
    /// The VGSError-style body for `error`, with its HTTP status.
    /// A 429, 503 or 507 carries `Retry-After` when its `extraInfo` has `retryAfterSeconds` (every
    /// 429, a 503 the store caused: ``CloakError/storeUnavailable(_:)``, and the disk reserve's 507).
    static func error(_ error: CloakError, headers: [(name: String, value: String)] = []) -> HTTPResponse {
        var headers = headers
        let status = error.code.httpStatus
        if status == 429 || status == 503 || status == 507,
            case let .number(seconds)? = error.extraInfo.first(where: { $0.key == "retryAfterSeconds" })?.value
        {
            headers.append(("Retry-After", seconds))
        }
        return .json(status, JSONWriter.encode(error.body), headers: headers)
    }

    static func json(_ status: Int, _ value: JSONValue, headers: [(name: String, value: String)] = []) -> HTTPResponse {
        .json(status, JSONWriter.encode(value), headers: headers)
    }
}

extension HTTPRequest {
    /// The body as a submission for `form`: read straight from its bytes when it has the usual
    /// shape, else parsed as a document first (which also finds the error to answer).
    func collectRequest(for form: FormSchema) throws(CloakError) -> CollectRequest {
        if let request = CollectRequest.reading(body, form: form) { return request }
        return try CollectRequest(try jsonBody(), form: form)
    }

    /// Refuses a body that does not say it is JSON (one `Content-Type`, `application/json` or
    /// `+json`). The endpoints that store values for anyone take JSON only: a page of another
    /// origin can make its visitors' browsers send a text/plain or form body without asking
    /// (no CORS preflight), but not a JSON one, so it cannot turn them into writers to the vault.
    func requireJSONContentType() throws(CloakError) {
        let (kind, count) = SelectableBody.of(headers)
        guard count == 1, kind == .json else {
            throw .malformed("send the body as JSON, with Content-Type: application/json")
        }
    }

    /// The body as JSON, or a 1002 error that says what is wrong without quoting it.
    func jsonBody() throws(CloakError) -> JSONValue {
        guard !body.isEmpty else { throw .malformed("the request has no body; expected a JSON object") }
        do {
            return try JSONParser().parse(body)
        } catch {
            throw .malformed("the body is not valid JSON: \(error.description)")
        }
    }
}
