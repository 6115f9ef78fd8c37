import CloakCore
import CloakHTTP
import Foundation

/// `GET /elements/v1/…`: Cloak Elements' loader, frame documents, scripts and form schemas
/// (docs/elements.md). Every `/elements/*` path answers 404 while `elements.allowed_origins`
/// is empty: no page may embed the frames of a Cloak that did not name it.
struct ElementsHandler: Sendable {
    let context: ServiceContext
    var settings: ElementsSettings { context.configuration.elements }

    /// 404 unless Elements is on.
    func requireEnabled() throws(CloakError) {
        guard settings.isEnabled else { throw .notFound("no such endpoint") }
    }

    /// `GET /elements/v1/{asset}`.
    func asset(_ request: HTTPRequest, name: String) throws(CloakError) -> HTTPResponse {
        try requireEnabled()
        guard let asset = ElementsAssets.byName[name] else { throw .notFound("no such Elements file") }
        var headers: [(name: String, value: String)] = [
            ("ETag", asset.etag), ("X-Content-Type-Options", "nosniff"),
        ]
        switch asset.kind {
        case .script, .style, .image:
            // No secret in them: any page may load them, with `<script integrity crossorigin>`.
            headers += [
                ("Cache-Control", "public, max-age=300"), ("Access-Control-Allow-Origin", "*"),
                ("Cross-Origin-Resource-Policy", "cross-origin"),
            ]
        case .document:
            headers += [
                ("Cache-Control", "no-cache"), ("Content-Security-Policy", frameCSP),
                ("Referrer-Policy", "no-referrer"),
            ]
        }
        return Self.conditional(
            request, etag: asset.etag, contentType: asset.contentType, body: asset.bytes, headers: headers)
    }

    /// The frames' Content-Security-Policy: Cloak's own scripts only, its own API only, and
    /// embedded only by the listed pages.
    var frameCSP: String {
        let fonts = settings.fontOrigins.joined(separator: " ")
        return [
            "default-src 'none'",
            "script-src 'self'",
            fonts.isEmpty ? "style-src 'self'" : "style-src 'self' \(fonts)",
            fonts.isEmpty ? "font-src 'none'" : "font-src \(fonts)",
            "connect-src 'self'",
            "img-src 'self' data:",
            "frame-ancestors " + settings.allowedOrigins.joined(separator: " "),
            "base-uri 'none'",
            "form-action 'none'",
        ].joined(separator: "; ")
    }

    /// `GET /elements/v1/forms/{form}`: the form's schema for the frames' (and CloakCollect's) rule engine, with
    /// today's date (expiry windows) and the origins the frames check their page against.
    func schema(_ request: HTTPRequest, form name: String) throws(CloakError) -> HTTPResponse {
        guard settings.admitsSchemaRequest(origin: request.header("Origin")) else {
            throw .notFound("no such endpoint")
        }
        guard let form = context.configuration.forms[name] else {
            throw .notFound("no such form")
        }
        guard case var .object(members) = form.browserSchema(today: context.today()) else {
            preconditionFailure("an object")
        }
        members.append(("targets", targets(form)))
        members.append(("allowedOrigins", .strings(settings.allowedOrigins)))
        members.append(("fontOrigins", .strings(settings.fontOrigins)))
        let body = JSONWriter.encode(.object(members))
        let etag = ElementsAssets.etag(for: body)
        return Self.conditional(
            request, etag: etag, contentType: "application/json", body: body,
            headers: [
                ("ETag", etag), ("Cache-Control", "no-cache"), ("Access-Control-Allow-Origin", "*"),
                ("X-Content-Type-Options", "nosniff"),
            ])
    }

    /// `GET /elements/v1/bins/{bin}`: the card attributes of the `bin` a card number's state
    /// shows (6 or 8 digits, never more), for the frames and apps that compute states on their
    /// own (issue 48): `{"cardAttributes": {…}}`, or `null` when no range holds it or no table
    /// is loaded. Admitted as the schema is.
    func bins(_ request: HTTPRequest, bin: String, table: BinTable?) throws(CloakError) -> HTTPResponse {
        guard settings.admitsSchemaRequest(origin: request.header("Origin")) else {
            throw .notFound("no such endpoint")
        }
        let digits = Array(bin.utf8)
        guard digits.count == 6 || digits.count == 8,
            digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
        else { throw .malformed("give the bin a card's state shows: 6 or 8 digits") }
        let attributes = table?.lookup(digits)
        return .json(
            200, JSONWriter.encode(.object([("cardAttributes", attributes?.json ?? .null)])),
            headers: [("Cache-Control", "max-age=300"), ("Access-Control-Allow-Origin", "*")])
    }

    /// Where the form's controller frame may send the values: the answer goes back to the page,
    /// so `tokens`, `send` and this form's routes only when no card number, CVC or SSN of the form
    /// can come back raw (each has `tokenization`, a CVC's not a last-four format); `validate`
    /// answers states only (the card frames release one last four per number: field.js). Routes with
    /// `request`/`response` operations, or without this form, forward bodies as they are: never.
    func targets(_ form: FormSchema) -> JSONValue {
        let sensitive: Set<FieldType> = [.cardNumber, .cvc, .ssn]
        let safe = form.fields.allSatisfy { field in
            guard sensitive.contains(field.type) else { return true }
            guard let tokenization = field.tokenization else { return false }
            // A last-four format keeps all of a three- or four-digit CVC.
            return field.type != .cvc || !tokenization.format.rawValue.hasSuffix("T_FOUR")
        }
        var routes: [String] = []
        for route in context.configuration.routes
        where safe && route.form == form.name && route.requestOperations.isEmpty && route.responseOperations.isEmpty {
            let path = route.prefix.dropFirst("/proxy".count)
            routes.append(path.isEmpty ? "/" : String(path))
        }
        return .object([
            ("kinds", .strings(safe ? ["tokens", "send", "validate"] : ["validate"])), ("routes", .strings(routes)),
        ])
    }

    /// 304 without a body when `If-None-Match` names `etag` (or is `*`), else 200 with `body`.
    static func conditional(
        _ request: HTTPRequest, etag: String, contentType: String, body: [UInt8],
        headers: [(name: String, value: String)]
    ) -> HTTPResponse {
        let tags = request.headerValues("If-None-Match").flatMap { $0.split(separator: ",") }
            .map { $0.trimmingCharacters(in: .whitespaces) }
        if tags.contains(etag) || tags.contains("W/" + etag) || tags.contains("*") {
            return HTTPResponse(status: 304, headers: headers)
        }
        return HTTPResponse(status: 200, headers: [("Content-Type", contentType)] + headers, body: body)
    }
}
