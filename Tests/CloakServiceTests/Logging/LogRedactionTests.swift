import CloakTesting
import Foundation
import Testing

/// No card number, CVC, SSN or Authorization value reaches a log line, whatever the body.
@Suite(.tags(.sockets)) struct LogRedactionTests {
    static let secrets = [
        "4111111111111111", "378282246310005", "5555555555554444", "123-45-6789", "123456789",
        "Bearer s3cr3t-t0ken", "s3cr3t-t0ken", "Jane Q Cardholder",
    ]

    @Test func logLinesCarryRequestFactsButNoSensitiveValue() throws {
        let server = try TestService()
        let client = try server.client()
        let auth = [("Authorization", "Bearer s3cr3t-t0ken")]
        _ = try client.request(
            "POST", "/forms/checkout/validate",
            json: """
                {"fields":{"card_data.card_number":"4111111111111111","card_data.card_cvc":"737",\
                "card_data.card_holder":"Jane Q Cardholder","customer.ssn":"123-45-6789"}}
                """, headers: auth)
        _ = try client.request(
            "POST", "/forms/checkout/validate", json: #"{"fields":{"card_data.card_number":"378282246310005""#,
            headers: auth)
        _ = try client.request(
            "POST", "/forms/checkout/validate", json: #"{"fields":{"5555555555554444":"123456789"}}"#)
        _ = try client.request("POST", "/forms/checkout/validate", json: #"{"fields":{"customer.ssn":123456789}}"#)
        _ = try client.request("POST", "/forms/4111111111111111/validate", json: "{}")
        _ = try client.request("GET", "/aliases/5555555555554444?q=123-45-6789")
        _ = try client.request("POST", "/forms/checkout/validate", body: Array("4111111111111111".utf8) + [0xFF])
        server.stop()

        // Timestamps and durations are digits too ("…:53.737Z"): only what the lines say counts.
        let text = server.logs.text.replacingOccurrences(of: #""ts":"[^"]*""#, with: "", options: .regularExpression)
            .replacingOccurrences(of: #""duration_us":[0-9]+"#, with: "", options: .regularExpression)
        let requests = server.logs.lines.filter { $0.contains(#""msg":"request""#) }
        #expect(requests.count == 7)
        for line in requests {
            for key in ["\"method\"", "\"path\"", "\"status\"", "\"duration_us\"", "\"request_id\""] {
                #expect(line.contains(key), "missing \(key) in \(line)")
            }
        }
        for secret in Self.secrets {
            #expect(!text.contains(secret), "log contains \(secret)")
        }
        #expect(!text.contains("737"), "log contains the CVC")
    }
}
