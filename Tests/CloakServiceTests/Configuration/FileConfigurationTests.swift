import CloakCore
import CloakService
import CloakTesting
import Foundation
import Testing

/// `check-config` on file fields and file reveals (issue 47): every mistake named by its path.
struct FileConfigurationTests {
    /// The shipped configuration with `forms.docs` holding `field` (one YAML flow mapping).
    static func form(_ field: String) -> String {
        TestServer.shippedConfiguration.replacingOccurrences(
            of: "\nforms:\n", with: "\nforms:\n  docs:\n    fields:\n      - \(field)\n")
    }

    static func egress(_ operation: String, response: Bool = false) -> String {
        TestServer.shippedConfiguration + """

            egress:
              routes:
                - id: kyc
                  upstream: "https://verify.example"
                  paths: ["/v1/*"]
                  \(response ? "response" : "request"): [\(operation)]
            """
    }

    static func issues(_ yaml: String) -> [String] {
        do {
            _ = try ServiceConfiguration.parse(yaml: yaml)
            return []
        } catch {
            return error.issues.map(\.path)
        }
    }

    @Test func aFileFieldLoadsWithItsRules() throws {
        let c = try ServiceConfiguration.parse(
            yaml: Self.form(
                "{name: doc, type: file, max_bytes: 2048, types: [application/pdf, image/png], max_files: 3, required: true}"
            ))
        let rules = try #require(c.forms["docs"]?.fields.first?.fileRules)
        #expect(rules == FileRules(maxBytes: 2048, types: [.pdf, .png], maxFiles: 3, isRequired: true))
        let defaults = try ServiceConfiguration.parse(yaml: Self.form("{name: doc, type: file}"))
        #expect(defaults.forms["docs"]?.fields.first?.fileRules == FileRules())
    }

    @Test(arguments: [
        ("{name: doc, type: file, max_bytes: 67108865}", "forms.docs.fields[0].max_bytes"),
        ("{name: doc, type: file, max_bytes: 0}", "forms.docs.fields[0].max_bytes"),
        ("{name: doc, type: file, max_files: 21}", "forms.docs.fields[0].max_files"),
        ("{name: doc, type: file, types: [text/html]}", "forms.docs.fields[0].types[0]"),
        ("{name: doc, type: file, types: []}", "forms.docs.fields[0].types"),
        ("{name: doc, type: file, mask: ['#']}", "forms.docs.fields[0].mask"),
        ("{name: doc, type: file, tokenization: {format: UUID}}", "forms.docs.fields[0].tokenization"),
        ("{name: doc, type: none, max_bytes: 10}", "forms.docs.fields[0].max_bytes"),
    ])
    func fileFieldMistakesAreNamed(field: String, path: String) {
        #expect(Self.issues(Self.form(field)).contains(path), "\(Self.issues(Self.form(field)))")
    }

    @Test(arguments: [
        ("{reveal: {json: [\"$.a\"], encoding: base32}}", false, "egress.routes[0].request[0].reveal.encoding"),
        ("{reveal: {header: [X-A], encoding: base64}}", false, "egress.routes[0].request[0].reveal.encoding"),
        ("{reveal: {multipart: [doc], json: [\"$.a\"]}}", false, "egress.routes[0].request[0].reveal.multipart"),
        ("{redact: {multipart: [doc]}}", false, "egress.routes[0].request[0].redact"),
        ("{reveal: {multipart: [doc]}}", true, "egress.routes[0].response[0]"),
    ])
    func fileRevealMistakesAreNamed(operation: String, response: Bool, path: String) {
        let yaml = Self.egress(operation, response: response)
        #expect(Self.issues(yaml).contains(path), "\(Self.issues(yaml))")
    }

    @Test func aFormRouteCannotNameAFormWithFiles() {
        let yaml = TestServer.shippedConfiguration.replacingOccurrences(
            of: "routes: []",
            with: "routes: [{id: \"3d4f2f1e-6a8e-4a55-9a41-5d2b1c7e9f10\", path: /x, upstream: echo, form: kyc}]")
        #expect(Self.issues(yaml).contains("routes[0].form"))
    }

    @Test(arguments: [
        ("{name: c, type: cardNumber, accept: {funding: [gift]}}", "forms.docs.fields[0].accept.funding[0]"),
        ("{name: c, type: cardNumber, accept: {countries: [ZZ]}}", "forms.docs.fields[0].accept.countries[0]"),
        ("{name: c, type: cardNumber, accept: {error: X}}", "forms.docs.fields[0].accept"),
        ("{name: c, type: ssn, accept: {funding: [credit]}}", "forms.docs.fields[0].accept"),
    ])
    func acceptRuleMistakesAreNamed(field: String, path: String) {
        #expect(Self.issues(Self.form(field)).contains(path), "\(Self.issues(Self.form(field)))")
    }

    @Test func anAcceptRuleLoads() throws {
        let c = try ServiceConfiguration.parse(
            yaml: Self.form("{name: c, type: cardNumber, accept: {funding: [credit, debit], countries: [US, CA]}}"))
        #expect(
            c.forms["docs"]?.fields.first?.accept
                == CardAcceptRule(funding: [.credit, .debit], countries: ["US", "CA"], error: "CARD_NOT_ACCEPTED"))
    }
}

extension FileConfigurationTests {
    @Test(arguments: [
        ("{digest: {header: X-Digest}}", "egress.routes[0].request[0].digest.header"),
        ("{digest: {}}, {reveal: {json: [\"$.a\"]}}", "egress.routes[0].request[1]"),
        ("{reveal: {multipart: [doc]}}, {digest: {header: Digest}}", "egress.routes[0].request[0]"),
    ])
    func stepMistakesAreNamed(list: String, path: String) {
        let yaml = Self.egress(list)
        #expect(Self.issues(yaml).contains(path), "\(Self.issues(yaml))")
    }
}
