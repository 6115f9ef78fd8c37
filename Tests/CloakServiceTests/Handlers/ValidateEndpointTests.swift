import CloakTesting
import Foundation
import Testing

/// `POST /forms/{form}/validate` against the real server and the shipped configuration.
@Suite(.tags(.sockets)) struct ValidateEndpointTests {
    static let goodCheckout = """
        {"fields":{"card_data.card_number":"4111 1111 1111 1111","card_data.card_cvc":"123",\
        "card_data.exp_date":"12/40","card_data.card_holder":"Jane Doe","billing.phone":"(555)123-4567",\
        "customer.ssn":"123-45-6789"}}
        """

    @Test func validSubmissionReturnsFieldStatesWithoutEchoingValues() throws {
        try withTestServer(TestService()) { server throws in
            let response = try server.client().request("POST", "/forms/checkout/validate", json: Self.goodCheckout)
            #expect(response.status == 200)
            #expect(response.header("Content-Type") == "application/json")
            let json = try #require(response.json)
            #expect(json["isValid"] as? Bool == true)
            let fields = try #require(json["fields"] as? [String: [String: Any]])
            let card = try #require(fields["card_data.card_number"])
            #expect(card["cardBrand"] as? String == "visa")
            #expect(card["cardBrandName"] as? String == "Visa")
            #expect(card["bin"] as? String == "41111111")
            #expect(card["last4"] as? String == "1111")
            #expect(card["inputLength"] as? Int == 16)
            #expect(fields["customer.ssn"]?["last4"] as? String == "6789")
            #expect(fields["billing.phone"]?["isValid"] as? Bool == true)
            #expect(!response.text.contains("4111111111111111"))
            #expect(!response.text.contains("4111 1111 1111 1111"))
            #expect(!response.text.contains("123-45-6789"))
            #expect(!response.text.contains("Jane Doe"))
        }
    }

    @Test func cvcLengthFollowsTheDetectedAmexBrand() throws {
        try withTestServer(TestService()) { server throws in
            let client = try server.client()
            let three = try client.request(
                "POST", "/forms/checkout/validate",
                json:
                    #"{"fields":{"card_data.card_number":"378282246310005","card_data.card_cvc":"123"}}"#)
            let four = try client.request(
                "POST", "/forms/checkout/validate",
                json:
                    #"{"fields":{"card_data.card_number":"378282246310005","card_data.card_cvc":"1234"}}"#)
            let threeFields = try #require(three.json?["fields"] as? [String: [String: Any]])
            let fourFields = try #require(four.json?["fields"] as? [String: [String: Any]])
            #expect(
                threeFields["card_data.card_cvc"]?["validationErrors"] as? [String] == [
                    "LENGTH_RANGE_MATCH_VALIDATION_ERROR"
                ])
            #expect(fourFields["card_data.card_cvc"]?["isValid"] as? Bool == true)
            #expect(fourFields["card_data.card_number"]?["bin"] as? String == "378282")
        }
    }

    @Test func invalidRequiredFieldsMakeTheFormInvalid() throws {
        try withTestServer(TestService()) { server throws in
            let response = try server.client().request(
                "POST", "/forms/checkout/validate",
                json:
                    #"{"fields":{"card_data.card_number":"4111 1111 1111 1112","card_data.exp_date":"01/20"}}"#)
            #expect(response.status == 200)
            let json = try #require(response.json)
            #expect(json["isValid"] as? Bool == false)
            let fields = try #require(json["fields"] as? [String: [String: Any]])
            #expect(
                fields["card_data.card_number"]?["validationErrors"] as? [String] == ["CARD_NUMBER_VALIDATION_ERROR"])
            #expect(fields["card_data.card_number"]?["bin"] as? String == "")
            #expect(
                fields["card_data.exp_date"]?["validationErrors"] as? [String] == ["EXPIRATION_DATE_VALIDATION_ERROR"])
            #expect(fields["card_data.card_holder"]?["isDirty"] as? Bool == false)
            #expect(fields["card_data.card_holder"]?["isEmpty"] as? Bool == true)
        }
    }

    @Test func identityFormValidatesDatesSSNAndRoutingNumbers() throws {
        try withTestServer(TestService()) { server throws in
            let response = try server.client().request(
                "POST", "/forms/identity/validate",
                json: """
                    {"fields":{"person.full_name":"Zoë O'Neil","person.birth_date":"02-29-2000","person.ssn":"123456789",\
                    "bank.routing_number":"011000015","bank.account_number":"000123456789"}}
                    """)
            let json = try #require(response.json)
            let fields = try #require(json["fields"] as? [String: [String: Any]])
            #expect(json["isValid"] as? Bool == true, "\(fields)")
            let bad = try server.client().request(
                "POST", "/forms/identity/validate",
                json: """
                    {"fields":{"person.birth_date":"02-29-2001","bank.routing_number":"011000016","person.ssn":"666-12-3456"}}
                    """)
            let badFields = try #require(bad.json?["fields"] as? [String: [String: Any]])
            #expect(badFields["person.birth_date"]?["validationErrors"] as? [String] == ["DATE_VALIDATION_ERROR"])
            #expect(
                badFields["bank.routing_number"]?["validationErrors"] as? [String] == [
                    "ABA_ROUTING_NUMBER_VALIDATION_ERROR"
                ])
            #expect(badFields["person.ssn"]?["validationErrors"] as? [String] == ["PATTERN_VALIDATION_ERROR"])
        }
    }

    @Test(arguments: TestMode.allCases) func healthAndReadinessAnswer(mode: TestMode) throws {
        try withTestService(mode) { server throws in
            let client = try server.testClient()
            #expect(try client.request("GET", "/healthz", body: nil, headers: []).status == 200)
            #expect(try client.request("GET", "/readyz", body: nil, headers: []).status == 200)
            #expect(try client.request("HEAD", "/healthz", body: nil, headers: []).status == 200)
        }
    }

    @Test func requestIdIsEchoedWhenWellFormedAndGeneratedOtherwise() throws {
        try withTestServer(TestServer()) { server throws in
            let client = try server.client()
            let given = try client.request("GET", "/healthz", headers: [("X-Request-Id", "abc-123")])
            #expect(given.header("X-Request-Id") == "abc-123")
            let hostile = try client.request("GET", "/healthz", headers: [("X-Request-Id", "4111111111111111<script>")])
            #expect(hostile.header("X-Request-Id") != nil)
            #expect(hostile.header("X-Request-Id")?.contains("4111111111111111") == false)
        }
    }
}

@Suite(.tags(.sockets)) struct MetricsTests {
    @Test func metricsCountRequestsByRouteTemplateAndStatusWithoutValues() throws {
        try withTestServer(TestService()) { server throws in
            let client = try server.client()
            _ = try client.request("POST", "/forms/checkout/validate", json: ValidateEndpointTests.goodCheckout)
            _ = try client.request("POST", "/forms/4111111111111111/validate", json: "{}")
            // The same route and status again after another: a loop's last-used cell is not reused wrongly.
            _ = try client.request("POST", "/forms/checkout/validate", json: ValidateEndpointTests.goodCheckout)
            _ = try client.request("POST", "/forms/checkout/validate", json: ValidateEndpointTests.goodCheckout)
            let r = try client.request("GET", "/metrics")
            #expect(r.status == 200)
            #expect(r.header("Content-Type")?.hasPrefix("text/plain") == true)
            #expect(
                r.text.contains(#"cloak_requests_total{route="/forms/{form}/validate",status="200"} 3"#), "\(r.text)")
            #expect(r.text.contains(#"cloak_requests_total{route="/forms/{form}/validate",status="404"} 1"#))
            #expect(r.text.contains("cloak_request_duration_seconds_bucket"))
            #expect(!r.text.contains("4111111111111111"))
        }
    }
}
