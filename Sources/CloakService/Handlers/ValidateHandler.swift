import CloakCore
import CloakHTTP

/// `POST /forms/{form}/validate`: field states for a submission; nothing stored, nothing echoed.
struct ValidateHandler: Sendable {
    let context: ServiceContext
    /// The BIN table card numbers' states take their attributes from (nil: none loaded).
    var bins: BinTable? = nil

    func handle(_ request: HTTPRequest, form name: String) throws(CloakError) -> HTTPResponse {
        guard let form = context.configuration.forms[name] else {
            throw .notFound("no such form")
        }
        let submission = try request.collectRequest(for: form)
        var validation = ValidationContext(today: context.today())
        validation.bins = bins
        let states = FormValidation(form: form, values: submission.values, context: validation)
        return .json(200, states.stateJSON)
    }
}

extension ValidateHandler: RequestHandler {
    /// `POST /forms/{form}/validate`.
    func reply(to c: RequestContext) throws(CloakError) -> Reply {
        .now(try handle(c.request, form: c.parameter("form")))
    }
}
