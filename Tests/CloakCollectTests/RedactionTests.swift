import CloakCollect
import Foundation
import Testing

/// Issue 35: no typed or revealed value in any description, debug description, mirror, dump or
/// error of the client.
@Suite struct RedactionTests {
    static let secrets = ["4111111111111111", "4111 1111 1111 1111", "111111", "123-45-6789", "987"]

    /// Everything a developer could print about `values`, in one text.
    static func printed(_ values: [Any]) -> String {
        var out = ""
        for value in values {
            out += "\(value)\n" + String(reflecting: value) + "\n"
            dump(value, to: &out)
            out += Mirror(reflecting: value).children.map { "\($0.label ?? ""): \($0.value)" }.joined(separator: ",")
        }
        return out
    }

    @Test func nothingTheUserTypedIsPrinted() async throws {
        let (collect, stub) = try await SchemaStub.collect("checkout")
        let number = try collect.field("card_data.card_number")
        let cvc = try collect.field("card_data.card_cvc")
        let ssn = try collect.field("customer.ssn")
        number.replace(0..<0, with: "4111111111111111")
        cvc.replace(0..<0, with: "987")
        ssn.replace(0..<0, with: "123456789")
        // The submission carries them (to Cloak: the stub) ...
        _ = try await collect.submit(.tokens)
        // (The card's attributes are asked for beside it, by its bin alone: a GET.)
        let submitted = stub.requests.last { $0.method == "POST" }
        let sent = String(decoding: submitted?.body ?? Data(), as: UTF8.self)
        #expect(sent.contains("4111 1111 1111 1111") && sent.contains("987"))
        // ... and nothing else shows them.
        var errors: [Any] = []
        do { _ = try collect.field("nope") } catch { errors.append(error) }
        do { _ = try await collect.submit(.route("/../x")) } catch { errors.append(error) }
        let text = Self.printed([collect, number, cvc, ssn, number.configuration] + errors)
        for secret in Self.secrets { #expect(!text.contains(secret), "\(secret) printed") }
        #expect(text.contains("card_data.card_number"))
    }

    @Test func aRevealedValueShowsOnlyThroughItsMaskOrClosure() async throws {
        let stub = RevealStub(value: "4111111111111111")
        let value = try await CloakReveal(server: URL(string: "https://cloak.example")!, session: "s", transport: stub)
            .reveal(alias: "a")
        let text = Self.printed([value])
        #expect(!text.contains("4111") && !text.contains("1111"))
        #expect(value.masked("•••• •••• •••• ####") == "•••• •••• •••• 1111")
        #expect(value.masked("#### ####") == "1111 1111")
        #expect(value.masked("••••") == "••••")
        #expect(value.withValue { $0.count } == 16)
    }
}

/// Answers every reveal with `value`.
struct RevealStub: CloakTransport {
    let value: String

    func send(_ request: CloakHTTPRequest) async throws -> CloakResponse {
        CloakResponse(status: 200, body: Data(#"{"value":"\#(value)"}"#.utf8))
    }
}
