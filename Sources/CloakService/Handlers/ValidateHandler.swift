import CloakCore
import CloakHTTP

/// `POST /forms/{form}/validate`: field states for a submission; nothing stored, nothing echoed.
struct ValidateHandler: Sendable {
    let context: ServiceContext

    func handle(_ request: HTTPRequest, form name: String) throws(CloakError) -> HTTPResponse {
        guard let form = context.configuration.forms[name] else {
            throw .notFound("no such form")
        }
        let submission = try request.collectRequest(for: form)
        let validation = FormValidation(
            form: form, values: submission.values, context: ValidationContext(today: context.today()))
        return .json(200, validation.stateJSON)
    }
}

extension ValidateHandler: RequestHandler {
    /// `POST /forms/{form}/validate`.
    func reply(to c: RequestContext) throws(CloakError) -> Reply {
        .now(try handle(c.request, form: c.parameter("form")))
    }
}
