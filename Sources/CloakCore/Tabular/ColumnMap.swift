/// How a file's columns become named values (issue 60's imports; the same rules as `cloak bins
/// import`): the header's names, renamed by `--map source=column,…`, must each be a column the
/// reader takes, or be read past by name (`--ignore-columns`); a column it takes may come once;
/// the required ones must all be there; and a column that must never be imported (a card's
/// security code: it may not be stored, PCI DSS 3.2) is refused by its name, whatever the map.
///
/// Pure: made from the header once, then applied to each row (``values(_:)``).
public struct ColumnMap: Sendable, Equatable {
    public enum Problem: Error, Sendable, Equatable, CustomStringConvertible {
        /// A header name that is no column the reader takes, nor ignored.
        case unknown(String, known: [String])
        /// Two header columns for one column (after the map).
        case twice(String)
        /// A required column is not in the header.
        case missing(String)
        /// A column that may never be imported, and why.
        case forbidden(String, reason: String)
        /// `--map` is not `source=column,…` with columns the reader takes.
        case badMapping(String)

        public var description: String {
            switch self {
            case let .unknown(name, known):
                return "unknown column \"\(name)\" (rename it to one that is read with --map \(name)=COLUMN, or read "
                    + "past it with --ignore-columns \(name); columns: \(known.joined(separator: ", ")))"
            case let .twice(name): return "two columns are \(name)"
            case let .missing(name): return "no column \(name)"
            case let .forbidden(name, reason): return "column \"\(name)\" is refused: \(reason)"
            case let .badMapping(pair): return "--map takes source=column,… with columns that are read; not \(pair)"
            }
        }
    }

    /// What a row of the file is short of or has too much of.
    public enum RowProblem: Error, Sendable, Equatable, CustomStringConvertible {
        case fieldCount(expected: Int, found: Int)

        public var description: String {
            switch self {
            case let .fieldCount(expected, found): return "\(found) fields where the header has \(expected)"
            }
        }
    }

    /// The columns taken, by the index of the header field each comes from.
    public let columns: [(index: Int, name: String)]
    /// How many fields each row must have (the header's).
    public let width: Int

    /// - Parameters:
    ///   - header: the file's first row.
    ///   - reads: every column the reader takes; `required` those it must have.
    ///   - mapping: source name → column (`--map`).
    ///   - ignored: source names read past on purpose (`--ignore-columns`).
    ///   - forbidden: column names (as written in the file, or as mapped) refused whatever the
    ///     map, with the reason a refusal gives.
    public init(
        header: [String], reads: [String], required: [String], mapping: [String: String] = [:],
        ignored: Set<String> = [], forbidden: [String: String] = [:]
    ) throws(Problem) {
        var taken: [(Int, String)] = []
        var seen: Set<String> = []
        for (index, raw) in header.enumerated() {
            let source = raw.trimmingSpaces()
            let name = mapping[source] ?? source
            if let reason = forbidden[source.lowercased()] ?? forbidden[name.lowercased()] {
                throw .forbidden(source, reason: reason)
            }
            guard reads.contains(name) else {
                if ignored.contains(source) { continue }
                throw .unknown(source, known: reads)
            }
            guard seen.insert(name).inserted else { throw .twice(name) }
            taken.append((index, name))
        }
        for name in required where !seen.contains(name) { throw .missing(name) }
        columns = taken
        width = header.count
    }

    /// Reads `--map a=b,c=d` against the columns a reader takes.
    public static func mapping(_ text: String, reads: [String]) throws(Problem) -> [String: String] {
        var out: [String: String] = [:]
        for pair in text.split(separator: ",") {
            let parts = pair.split(separator: "=", maxSplits: 1).map { String($0).trimmingSpaces() }
            guard parts.count == 2, !parts[0].isEmpty, reads.contains(parts[1]) else {
                throw .badMapping(String(pair))
            }
            out[parts[0]] = parts[1]
        }
        return out
    }

    /// A row's values by column (an empty field is an empty value: the caller's rules decide).
    public func values(_ fields: [String]) throws(RowProblem) -> [String: String] {
        guard fields.count == width else { throw .fieldCount(expected: width, found: fields.count) }
        var out: [String: String] = [:]
        for column in columns { out[column.name] = fields[column.index] }
        return out
    }

    public static func == (a: ColumnMap, b: ColumnMap) -> Bool {
        a.width == b.width && a.columns.map(\.index) == b.columns.map(\.index)
            && a.columns.map(\.name) == b.columns.map(\.name)
    }
}
