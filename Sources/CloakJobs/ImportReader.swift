import CloakCore
import CloakVault

/// An import's input read back into rows (issue 60): CSV with a header, or JSON Lines, through
/// the job's ``ImportPlan`` columns. Each row read is one item, imported or refused, in the
/// file's order: the job's cursor counts them, so a job taken over by another node reads the
/// same items and skips the ones already committed. Pure.
package struct ImportReader {
    /// One row's values by column, or why it cannot be read (with its id, when that much of
    /// it can be: the advice file names the row).
    package typealias Item = (line: Int, id: String?, values: Result<[String: String], ImportRefusal>)

    /// Nothing after this can be read: the job fails.
    package struct Fatal: Error, CustomStringConvertible {
        package let description: String

        /// `text` with every long digit run replaced (``Redaction/scrub(_:limit:)``): a header
        /// that is really a row of data names its "columns", and a card number must not reach
        /// an error body or the job's failure.
        init(description text: String) { description = Redaction.scrub(text, limit: 400) }
    }

    private let plan: ImportPlan
    private var csv: CSVReader?
    private var jsonl: JSONLinesReader?
    private var columns: ColumnMap?

    init(plan: ImportPlan) {
        self.plan = plan
        switch plan.spec.layout {
        case .csv: csv = CSVReader()
        case .jsonl: jsonl = JSONLinesReader()
        }
    }

    mutating func feed(_ bytes: [UInt8]) throws(Fatal) -> [Item] {
        if csv != nil {
            var items: [Item] = []
            for row in csv!.feed(bytes) {
                if let item = try take(row) { items.append(item) }
            }
            return items
        }
        return jsonl!.feed(bytes).map(take)
    }

    /// The end of the input.
    mutating func finish() throws(Fatal) -> [Item] {
        if csv != nil {
            let last: CSVReader.Row?
            do { last = try csv!.finish() } catch { throw Fatal(description: "the file is not CSV: \(error)") }
            guard let last else {
                if columns == nil { throw Fatal(description: "the file is empty: no header line") }
                return []
            }
            return try take(last).map { [$0] } ?? []
        }
        return jsonl!.finish().map { [take($0)] } ?? []
    }

    private mutating func take(_ row: CSVReader.Row) throws(Fatal) -> Item? {
        guard let columns else {
            // The header: a problem here leaves no row readable.
            guard case let .fields(names, _) = row else {
                throw Fatal(description: "the header line cannot be read: \(Self.problem(row))")
            }
            do { self.columns = try plan.columns(names) } catch { throw Fatal(description: "\(error)") }
            return nil
        }
        switch row {
        case let .refused(line, problem):
            return (line, nil, .failure(Self.malformed("the row is not CSV: \(problem)")))
        case let .fields(fields, line):
            do { return (line, nil, .success(try columns.values(fields))) } catch {
                let id = columns.columns.first { $0.name == ImportPlan.idColumn }
                    .flatMap { $0.index < fields.count ? fields[$0.index] : nil }
                return (line, id, .failure(Self.malformed("\(error)")))
            }
        }
    }

    private func take(_ row: JSONLinesReader.Row) -> Item {
        switch row {
        case let .refused(line, problem):
            return (line, nil, .failure(Self.malformed("the line is not an object of strings: \(problem)")))
        case let .object(object, line):
            // Each object is its own header: its keys pass the same column rules.
            do {
                let keys = object.keys.sorted()
                let map = try plan.columns(keys)
                return (line, nil, .success(try map.values(keys.map { object[$0]! })))
            } catch {
                let id =
                    plan.mapping.first { $0.value == ImportPlan.idColumn }.flatMap { object[$0.key] }
                    ?? object[ImportPlan.idColumn]
                return (line, id, .failure(Self.malformed("\(error)")))
            }
        }
    }

    private static func problem(_ row: CSVReader.Row) -> String {
        if case let .refused(_, problem) = row { return problem.description }
        return "a row"
    }

    /// A row's refusal, its reason scrubbed as ``Fatal``'s (a JSON line's keys are the file's).
    static func malformed(_ reason: String) -> ImportRefusal {
        ImportRefusal(code: CloakError.Code.malformedRequest.rawValue, reason: Redaction.scrub(reason, limit: 400))
    }
}
