import CloakCollect
import CloakCore
import CloakService
import CloakTesting
import Foundation
import Testing

/// Issue 48: a card number's state carries the attributes of the bin it shows, as the server's
/// does. The client has no BIN table: it asks `GET /elements/v1/bins/{bin}` (the digits the state
/// shows, never more), once per bin, and judges the field's `accept` rule on the answer.
///
/// The stub answers bins from a table as the server's endpoint does (ElementsHandler.bins), and
/// each state is compared with CloakCore's with that table: what `POST /forms/{form}/validate`
/// answers for the same text. (No test here imports a table into a live server: that needs the
/// vault's store, CloakVault, which this test target does not depend on; the live test checks
/// the endpoint without a table.)
@Suite(.tags(.sockets)) struct CardAttributesTests {
    static let form = "cards"
    static let forms = """
        forms:
          cards:
            fields:
              - {name: card, type: cardNumber}
              - name: debit_card
                type: cardNumber
                required_valid_only: true
                accept: {funding: [debit, charge], countries: [US]}
        """
    /// An eight-digit range (a Visa's bin), a six-digit one that holds a Mastercard's eight-digit
    /// bin, and an Amex's six-digit one.
    static let csv = """
        low,high,brand,funding,issuer,country,currency
        41111111,41111111,visa,credit,Test Bank,US,USD
        555555,555555,mastercard,debit,Other Bank,CA,CAD
        378282,378282,amex,charge,Charge Bank,US,USD

        """
    /// The date the schema stub serves.
    static let today = CalendarDate(year: 2026, month: 11, day: 24)!

    static func table() throws -> BinTable { try BinTable(BinTableReader(format: .csv).read(Array(csv.utf8))) }

    /// A collector of the test form `cards`, its schema and bins served by a ``BinStub``.
    static func collect(gate: Gate? = nil) async throws -> (CloakCollect, BinStub) {
        let yaml = TestServer.shippedConfiguration.replacingOccurrences(of: "\nforms:\n", with: "\n" + forms + "\n")
        let stub = try BinStub(yaml: yaml, table: table(), gate: gate)
        let collect = CloakCollect(server: URL(string: "https://cloak.example")!, form: form, transport: stub)
        try await collect.loadSchema()
        return (collect, stub)
    }

    /// The client's states and form check equal the server's for the same texts: CloakCore's
    /// validation with the stub's table, as `POST /forms/{form}/validate` computes them.
    static func expectServerStates(_ collect: CloakCollect, _ stub: BinStub, _ texts: [String: String]) throws {
        let form = try #require(stub.schemas.configuration.forms[Self.form])
        var context = ValidationContext(today: today)
        context.bins = stub.table
        let validation = FormValidation(form: form, values: form.fields.map { texts[$0.name] }, context: context)
        let server = try LiveServer.states(CloakResponse(status: 200, body: Data(validation.stateJSON)))
        let client = collect.state
        for (name, state) in server.fields {
            #expect(client.fields[name] == state, "\(name)")
        }
        #expect(client.fields.count == server.fields.count)
        #expect(client.isValid == server.isValid)
    }

    static func paths(_ stub: BinStub) -> [String] { stub.binRequests.map(\.url.path) }

    @Test func aValidCardGainsTheAttributesOfItsBin() async throws {
        let (collect, stub) = try await Self.collect()
        let number = try collect.field("card")
        let watch = Watch(number)
        // Typed digit by digit, as a user would.
        for digit in "4111111111111111" {
            let end = number.text.utf16.count
            number.replace(end..<end, with: String(digit))
        }
        #expect(number.text == "4111 1111 1111 1111")
        let seen = await watch.next { $0.cardAttributes != nil }
        let state = try #require(seen, "no attributes came")
        #expect(state.cardAttributes == stub.table.lookup("41111111"))
        #expect(state.cardAttributes?.funding == .credit && state.cardAttributes?.issuer == "Test Bank")
        #expect(state.isValid && state.validationErrors.isEmpty && state.bin == "41111111" && state.last4 == "1111")
        #expect(number.state == state)
        // Only the bin the state shows was asked for, once: no more digits than it, no body.
        #expect(Self.paths(stub) == ["/elements/v1/bins/41111111"])
        #expect(stub.binRequests.allSatisfy { $0.method == "GET" && $0.body == nil && $0.url.query == nil })
        // The server's state for the same text, attributes included.
        try Self.expectServerStates(collect, stub, ["card": number.text])
    }

    @Test func aCardTheAcceptRuleRefusesShowsWhy() async throws {
        let (collect, stub) = try await Self.collect()
        let card = try collect.field("debit_card")
        let watch = Watch(card)
        // A credit card: refused by its funding, its bin, last four and attributes still shown.
        card.replace(0..<0, with: "4111111111111111")
        let refused = await watch.next { $0.cardAttributes != nil }
        let credit = try #require(refused, "no attributes came")
        #expect(credit.validationErrors == ["CARD_NOT_ACCEPTED"] && !credit.isValid)
        #expect(credit.bin == "41111111" && credit.last4 == "1111")
        #expect(credit.cardAttributes == stub.table.lookup("41111111") && credit.cardAttributes?.funding == .credit)
        #expect(!collect.state.isValid)  // required_valid_only
        try Self.expectServerStates(collect, stub, ["debit_card": card.text])

        // A Mastercard whose eight-digit bin a six-digit range holds: a Canadian debit card,
        // refused by its country.
        card.replace(0..<card.text.utf16.count, with: "5555555555554444")
        let country = await watch.next { $0.bin == "55555555" && $0.cardAttributes != nil }
        let canadian = try #require(country, "no attributes came")
        #expect(canadian.cardAttributes == stub.table.lookup("555555") && canadian.cardAttributes?.country == "CA")
        #expect(canadian.validationErrors == ["CARD_NOT_ACCEPTED"] && !canadian.isValid && canadian.last4 == "4444")
        try Self.expectServerStates(collect, stub, ["debit_card": card.text])

        // An Amex (a six-digit bin), a US charge card: taken.
        card.replace(0..<card.text.utf16.count, with: "378282246310005")
        let taken = await watch.next { $0.bin == "378282" && $0.cardAttributes != nil }
        let charge = try #require(taken, "no attributes came")
        #expect(charge.cardAttributes == stub.table.lookup("378282") && charge.cardAttributes?.funding == .charge)
        #expect(charge.isValid && charge.validationErrors.isEmpty && charge.last4 == "0005")
        #expect(collect.state.isValid)
        try Self.expectServerStates(collect, stub, ["debit_card": card.text])
        #expect(
            Self.paths(stub) == [
                "/elements/v1/bins/41111111", "/elements/v1/bins/55555555", "/elements/v1/bins/378282",
            ])
    }

    @Test func nothingIsAskedWithoutABinAndABinIsAskedOnce() async throws {
        let (collect, stub) = try await Self.collect()
        let number = try collect.field("card")
        let watch = Watch(number)
        // Not Luhn-valid, incomplete, and a valid 13-digit Visa (a Visa shows its eight-digit bin
        // at 16 digits or more): no bin shows, nothing is asked.
        for text in ["4111111111111112", "4111 1111", "4222222222222"] {
            number.replace(0..<number.text.utf16.count, with: text)
            #expect(number.state.bin == "" && number.state.cardAttributes == nil, "\(text)")
        }
        #expect(number.state.isValid)  // the 13-digit Visa
        number.replace(0..<number.text.utf16.count, with: "4111111111111111")
        let seen = await watch.next { $0.cardAttributes != nil }
        #expect(seen?.cardAttributes == stub.table.lookup("41111111"))
        #expect(Self.paths(stub) == ["/elements/v1/bins/41111111"])
        // The answer is kept: the same bin again shows it at once, without asking.
        number.clear()
        #expect(number.state.cardAttributes == nil && number.state.bin == "")
        number.replace(0..<0, with: "4111111111111111")
        #expect(number.state.cardAttributes == stub.table.lookup("41111111"))
        #expect(Self.paths(stub) == ["/elements/v1/bins/41111111"])
        try Self.expectServerStates(collect, stub, ["card": number.text])
    }

    @Test func anAnswerForABinNoLongerShownChangesNoState() async throws {
        let gate = Gate()
        let (collect, stub) = try await Self.collect(gate: gate)
        let number = try collect.field("card")
        let watch = Watch(number)
        // The Visa's answer is held until the field shows a Mastercard.
        number.replace(0..<0, with: "4111111111111111")
        number.replace(0..<number.text.utf16.count, with: "5555555555554444")
        #expect(number.state.bin == "55555555" && number.state.cardAttributes == nil)
        gate.open("41111111")
        gate.open("55555555")
        let later = await watch.next { $0.cardAttributes != nil }
        let mastercard = try #require(later, "no attributes came")
        #expect(mastercard.bin == "55555555" && mastercard.cardAttributes == stub.table.lookup("55555555"))
        // Back to the Visa: its answer (kept, or still on its way) is its own, not asked again.
        number.replace(0..<number.text.utf16.count, with: "4111111111111111")
        let again = await watch.next { $0.bin == "41111111" && $0.cardAttributes != nil }
        let visa = try #require(again, "no attributes came")
        #expect(visa.cardAttributes == stub.table.lookup("41111111"))
        // No state ever showed attributes but its own bin's.
        for state in watch.all {
            #expect(state.cardAttributes == nil || state.cardAttributes == stub.table.lookup(state.bin ?? ""))
        }
        #expect(Self.paths(stub).sorted() == ["/elements/v1/bins/41111111", "/elements/v1/bins/55555555"])
        try Self.expectServerStates(collect, stub, ["card": number.text])
    }

    @Test func theStateReadsAndWritesAttributesAsTheServerWritesThem() throws {
        let attributes = CardAttributes(brand: "visa", funding: .debit, issuer: "Test Bank", country: "US")
        let state = CloakFieldState(
            isValid: true, isEmpty: false, isDirty: true, inputLength: 16, cardBrand: "visa", cardBrandName: "Visa",
            bin: "41111111", last4: "1111", cardAttributes: attributes)
        #expect(try JSONDecoder().decode(CloakFieldState.self, from: JSONEncoder().encode(state)) == state)
        let server = """
            {"isRequired":false,"isRequiredValidOnly":false,"isValid":true,"isEmpty":false,"isDirty":true,\
            "inputLength":16,"validationErrors":[],"cardBrand":"visa","cardBrandName":"Visa","bin":"41111111",\
            "last4":"1111","cardAttributes":{"brand":"visa","funding":"debit","issuer":"Test Bank","country":"US"}}
            """
        #expect(try JSONDecoder().decode(CloakFieldState.self, from: Data(server.utf8)) == state)
        let unknown = server.replacingOccurrences(of: #""funding":"debit""#, with: #""funding":"barter""#)
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(CloakFieldState.self, from: Data(unknown.utf8))
        }
    }

    /// Against the real server, which has no table: the bin alone is asked, the answer is
    /// `{"cardAttributes": null}`, and the client's states are the server's.
    @Test func theLiveServerAnswersABinItHasNoTableFor() async throws {
        try await withTestServer(LiveServer.start()) { server in
            let tap = Tap()
            let collect = CloakCollect(server: LiveServer.url(server), form: "checkout", transport: tap)
            try await collect.loadSchema()
            let number = try collect.field("card_data.card_number")
            number.replace(0..<0, with: "4111111111111111")
            let asked = await tap.answers.next()
            let answer = try #require(asked, "no bin was asked")
            #expect(answer.path == "/elements/v1/bins/41111111" && answer.response.status == 200)
            let body = String(decoding: answer.response.body, as: UTF8.self)
            let json = answer.response.json as? [String: Any]
            #expect(json?.count == 1 && json?["cardAttributes"] is NSNull, "\(body)")
            let validated = try LiveServer.states(try await collect.submit(.validate))
            #expect(validated.isValid == collect.state.isValid && validated.fields == collect.state.fields)
            #expect(collect.state.fields["card_data.card_number"]?.cardAttributes == nil)
            #expect(collect.state.fields["card_data.card_number"]?.bin == "41111111")
        }
    }
}

/// The schema stub, with `GET /elements/v1/bins/{bin}` answered as the server answers it from
/// `table`; each bin's answer held by `gate`, when there is one, until the test opens it.
final class BinStub: CloakTransport, @unchecked Sendable {
    static let prefix = "/elements/v1/bins/"
    let schemas: SchemaStub
    let table: BinTable
    let gate: Gate?
    private let lock = NSLock()
    private var asked: [CloakHTTPRequest] = []

    init(yaml: String, table: BinTable, gate: Gate?) throws {
        schemas = try SchemaStub(yaml: yaml)
        self.table = table
        self.gate = gate
    }

    /// The bins requests, in the order they came.
    var binRequests: [CloakHTTPRequest] { lock.withLock { asked } }

    func send(_ request: CloakHTTPRequest) async throws -> CloakResponse {
        let path = request.url.path
        guard request.method == "GET", path.hasPrefix(Self.prefix) else { return try await schemas.send(request) }
        lock.withLock { asked.append(request) }
        let bin = String(path.dropFirst(Self.prefix.count))
        await gate?.wait(bin)
        let attributes = table.lookup(bin)
        return CloakResponse(
            status: 200, body: Data(JSONWriter.encode(.object([("cardAttributes", attributes?.json ?? .null)]))))
    }
}

/// URLSession, each answer of `GET /elements/v1/bins/{bin}` handed to `answers` too.
final class Tap: CloakTransport, Sendable {
    struct Answer: Sendable {
        let path: String
        let response: CloakResponse
    }

    private let session = URLSessionTransport()
    let answers = Mailbox<Answer>()

    func send(_ request: CloakHTTPRequest) async throws -> CloakResponse {
        let response = try await session.send(request)
        let path = request.url.path
        if path.hasPrefix(BinStub.prefix) { answers.post(Answer(path: path, response: response)) }
        return response
    }
}

/// Holds each bin's answer until the test opens it (before or after it is asked).
final class Gate: @unchecked Sendable {
    private let lock = NSLock()
    private var opened: Set<String> = []
    private var waiting: [String: [CheckedContinuation<Void, Never>]] = [:]

    func open(_ bin: String) {
        let released = lock.withLock { () -> [CheckedContinuation<Void, Never>] in
            opened.insert(bin)
            return waiting.removeValue(forKey: bin) ?? []
        }
        for continuation in released { continuation.resume() }
    }

    func wait(_ bin: String) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let isOpen = lock.withLock { () -> Bool in
                if opened.contains(bin) { return true }
                waiting[bin, default: []].append(continuation)
                return false
            }
            if isOpen { continuation.resume() }
        }
    }
}

/// A field's states as its `onChange` reports them: every one, and a wait for one.
final class Watch: @unchecked Sendable {
    let field: CloakField
    private let changes = Mailbox<CloakFieldState>()
    private let lock = NSLock()
    private var heard: [CloakFieldState] = []

    init(_ field: CloakField) {
        self.field = field
        field.onChange = { [weak self] changed in self?.record(changed.state) }
    }

    /// Every state the field reported, in order.
    var all: [CloakFieldState] { lock.withLock { heard } }

    private func record(_ state: CloakFieldState) {
        lock.withLock { heard.append(state) }
        changes.post(state)
    }

    /// The field's state once `condition` holds for it: now, or at a change the field reports
    /// from now on; nil when none does within 10 seconds of the last one.
    func next(where condition: (CloakFieldState) -> Bool) async -> CloakFieldState? {
        changes.drain()
        let now = field.state
        if condition(now) { return now }
        while let state = await changes.next() {
            if condition(state) { return state }
        }
        return nil
    }
}

/// Values handed over by other threads (observers, transports), awaited one by one. A wait gives
/// up after 10 seconds (nil), so a value that never comes fails the test instead of hanging it:
/// the wait itself is on the value, never a fixed sleep.
final class Mailbox<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var queued: [Value] = []
    private var waiter: (id: Int, continuation: CheckedContinuation<Value?, Never>)?
    private var waits = 0

    func post(_ value: Value) {
        let waiting = lock.withLock { () -> CheckedContinuation<Value?, Never>? in
            guard let waiter else {
                queued.append(value)
                return nil
            }
            self.waiter = nil
            return waiter.continuation
        }
        waiting?.resume(returning: value)
    }

    /// Forgets the values that came and were not awaited.
    func drain() { lock.withLock { queued.removeAll() } }

    /// The next value (the first of those that came already), or nil after 10 seconds without one.
    func next() async -> Value? {
        let id = lock.withLock { () -> Int in
            waits += 1
            return waits
        }
        let timeout = Task { [weak self] in
            do { try await Task.sleep(nanoseconds: 10_000_000_000) } catch { return }  // cancelled: it came
            self?.giveUp(id)
        }
        defer { timeout.cancel() }
        return await withCheckedContinuation { (continuation: CheckedContinuation<Value?, Never>) in
            let ready = lock.withLock { () -> Value? in
                if !queued.isEmpty { return queued.removeFirst() }
                waiter = (id, continuation)
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    private func giveUp(_ id: Int) {
        let waiting = lock.withLock { () -> CheckedContinuation<Value?, Never>? in
            guard let waiter, waiter.id == id else { return nil }
            self.waiter = nil
            return waiter.continuation
        }
        waiting?.resume(returning: nil)
    }
}
