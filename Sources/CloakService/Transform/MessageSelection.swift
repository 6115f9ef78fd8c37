import CloakCore
import CloakHTTP
import CloakVault

/// What a list of route operations selects in one message (a request or an answer): each value
/// its selectors pick in the body (by `Content-Type`) and headers, with the operation that picked
/// it first. ``apply(_:)`` puts replacements back; every other byte goes on as it came, and a
/// message with nothing selected goes on byte-identical.
struct MessageSelection: Sendable {
    typealias Operation = Route.Operation

    enum Place: Sendable {
        case json(Int)
        case form(Int)
        case header(Int)
    }

    /// One selected value.
    struct Item: Sendable {
        let place: Place
        let operation: Operation
        /// The selector that picked it, for errors: a JSON path, a form key or a header name.
        let selector: String
        let text: Sensitive<String>

        var isHeader: Bool {
            if case .header = place { return true }
            return false
        }
    }

    let json: JSONSelection?
    let form: FormSelection?
    /// The selected headers, as indices into the message's headers.
    let headerIndices: [Int]
    let items: [Item]

    /// - Throws: 1002 when a body of a selected kind does not parse, or a JSON selector picks a
    ///   value that is not a string or number (named by its path, never quoted); and when the
    ///   operations select in bodies and a body is not one they can read (no `Content-Type`,
    ///   several, or a type none of its selectors reads): such a body would pass unread, with
    ///   whatever card number it holds.
    init(body: [UInt8], headers: [(name: String, value: String)], operations: [Operation]) throws(CloakError) {
        let (kind, typeCount) = SelectableBody.of(headers)
        let paths = operations.flatMap(\.json)
        let keys = Set(operations.flatMap(\.form))
        if !body.isEmpty, !paths.isEmpty || !keys.isEmpty {
            try Self.checkReadable(kind: kind, typeCount: typeCount, json: !paths.isEmpty, form: !keys.isEmpty)
        }
        var items: [Item] = []
        var json: JSONSelection?
        if kind == .json, !paths.isEmpty, !body.isEmpty {
            json = try JSONSelection.select(paths, in: body)
            for (i, match) in (json?.matches ?? []).enumerated() {
                let op = operations.first { $0.json.contains { $0.description == match.path } }!
                items.append(Item(place: .json(i), operation: op, selector: match.path, text: match.text))
            }
        }
        var form: FormSelection?
        if kind == .form, !keys.isEmpty, !body.isEmpty {
            form = try FormSelection.select(keys, in: body)
            for (i, match) in (form?.matches ?? []).enumerated() {
                let op = operations.first { $0.form.contains(match.key) }!
                items.append(Item(place: .form(i), operation: op, selector: match.key, text: match.text))
            }
        }
        var headerIndices: [Int] = []
        for (index, header) in headers.enumerated() {
            guard let op = operations.first(where: { $0.header.contains { $0.caseInsensitiveEquals(header.name) } })
            else { continue }
            items.append(
                Item(
                    place: .header(headerIndices.count), operation: op, selector: header.name,
                    text: Sensitive(header.value)))
            headerIndices.append(index)
        }
        self.json = json
        self.form = form
        self.headerIndices = headerIndices
        self.items = items
    }

    /// Refuses a body the selectors cannot read: one `Content-Type` of a kind they select in.
    private static func checkReadable(kind: SelectableBody, typeCount: Int, json: Bool, form: Bool)
        throws(CloakError)
    {
        let reads = [json ? "application/json" : nil, form ? "application/x-www-form-urlencoded" : nil]
            .compactMap { $0 }.joined(separator: " or ")
        guard typeCount == 1 else {
            throw .malformed(
                typeCount == 0
                    ? "the body has no Content-Type; the route's selectors read \(reads)"
                    : "the message has \(typeCount) Content-Type headers; the route's selectors read one")
        }
        guard (kind == .json && json) || (kind == .form && form) else {
            throw .malformed("the body is of a type the route's selectors do not read; they read \(reads)")
        }
    }

    /// The selectors of `operations` (as configured) that took a value here, and those that took
    /// none, in configuration order (the logs name both; a required one that took none refuses).
    func selectors(of operations: [Operation]) -> (matched: [String], missed: [String]) {
        var matched: [String] = []
        var missed: [String] = []
        var seen = Set<String>()
        for op in operations where !op.revealsFiles {
            for (selector, isHeader) in op.json.map({ ($0.description, false) }) + op.form.map({ ($0, false) })
                + op.header.map({ ($0, true) })
            where seen.insert(selector).inserted {
                let took = items.contains {
                    isHeader ? ($0.isHeader && $0.selector.caseInsensitiveEquals(selector)) : $0.selector == selector
                }
                if took { matched.append(selector) } else { missed.append(selector) }
            }
        }
        return (matched, missed)
    }

    /// The required selectors of `operations` that took nothing here.
    func missedRequired(of operations: [Operation]) -> [String] {
        let missed = Set(selectors(of: operations).missed)
        return operations.flatMap(\.required).filter { missed.contains($0) }
    }

    var isEmpty: Bool { items.isEmpty }
    var revealCount: Int { items.count { $0.operation.action == .reveal } }
    var redactCount: Int { items.count { $0.operation.action == .redact } }

    /// The body and headers with `replacements[i]` in place of `items[i]`.
    func apply(_ replacements: [String], body: [UInt8], headers: [(name: String, value: String)])
        -> (body: [UInt8], headers: [(name: String, value: String)])
    {
        var jsonTexts: [String] = [], formTexts: [String] = []
        var headers = headers
        for (item, text) in zip(items, replacements) {
            switch item.place {
            case .json: jsonTexts.append(text)
            case .form: formTexts.append(text)
            case let .header(i): headers[headerIndices[i]].value = text
            }
        }
        var body = body
        if let json { body = json.rewrite(jsonTexts) }
        if let form { body = form.rewrite(formTexts) }
        return (body, headers)
    }
}

extension SelectableBody {
    /// The kind of a message's first `Content-Type`, and how many it has (a message with two is
    /// read by no selector: a peer could take either). One pass, nothing copied: it runs on
    /// every message a route's operations read.
    static func of(_ headers: [(name: String, value: String)]) -> (kind: SelectableBody, count: Int) {
        var first: String?
        var count = 0
        for header in headers where header.name.caseInsensitiveEquals("Content-Type") {
            if count == 0 { first = header.value }
            count += 1
        }
        return (SelectableBody(contentType: first), count)
    }
}
