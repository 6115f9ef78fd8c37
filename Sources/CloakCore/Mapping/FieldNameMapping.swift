/// How a field name such as `card_data.numbers[1].value` becomes a place in the outgoing JSON,
/// as the SDK's `VGSFieldNameToSubscriptMapper` parses it.
public enum FieldNameSubscript: Sendable, Equatable {
    case key(String)
    case index(Int)

    /// The largest array index a name may hold. Array policies pad arrays up to the index, so
    /// `x[85555555]` would allocate gigabytes per submission; a larger `[n]` is not an index.
    public static let maxIndex = 1_000

    /// The array indices in `name` over ``maxIndex`` (the configuration refuses such names).
    public static func oversizedIndices(in name: String) -> [Substring] {
        var out: [Substring] = []
        for part in name.split(separator: ".", omittingEmptySubsequences: true) {
            var rest = part[...]
            while let open = rest.firstIndex(of: "[") {
                let after = rest[rest.index(after: open)...]
                let digits = after.prefix { $0.isASCII && $0.isNumber }
                if !digits.isEmpty, after.dropFirst(digits.count).first == "]",
                    Int(digits).map({ $0 > maxIndex }) ?? true
                {
                    out.append(digits)
                }
                rest = after
            }
        }
        return out
    }

    /// Splits on `.` (empty parts dropped); each part gives its text before the first `[` as a
    /// key, then the **first** `[n]` as an index. Later indices and text after `]` are ignored,
    /// and a part such as `[0]` gives the key `""`.
    public static func parse(_ name: String) -> [FieldNameSubscript] {
        var out: [FieldNameSubscript] = []
        for part in name.split(separator: ".", omittingEmptySubsequences: true) {
            let bracket = part.firstIndex(of: "[") ?? part.endIndex
            out.append(.key(String(part[..<bracket])))
            if let index = firstIndex(in: part) { out.append(.index(index)) }
        }
        return out
    }

    /// The first `\[\d+\]` in a part.
    private static func firstIndex(in part: Substring) -> Int? {
        var rest = part[...]
        while let open = rest.firstIndex(of: "[") {
            let after = rest[rest.index(after: open)...]
            let digits = after.prefix { $0.isASCII && $0.isNumber }
            if !digits.isEmpty, after.dropFirst(digits.count).first == "]", let n = Int(digits), n <= maxIndex {
                return n
            }
            rest = after
        }
        return nil
    }
}

/// Builds the body a collect request sends, by `VGSCollectFieldNameMappingPolicy`.
public enum FieldNameMapper {
    /// The JSON object for `fields` (name, value in order) under `policy`, merged with `extraData`
    /// so that field values win on a conflict.
    public static func body(
        _ fields: [(name: String, value: JSONValue)], extraData: [(key: String, value: JSONValue)],
        policy: MappingPolicy
    ) -> JSONValue {
        let extra = JSONValue.object(extraData)
        switch policy {
        case .flatJSON:
            return JSONMerge.deepMerge(extra, .object(fields.map { ($0.name, $0.value) }))
        case .nestedJSON:
            var body = JSONValue.object([])
            for field in fields {
                let keys = field.name.split(separator: ".", omittingEmptySubsequences: true).map(String.init)
                // A name with no part (".") would replace the whole body with one value; the
                // configuration refuses such names, and the mapper never lets one through.
                guard !keys.isEmpty else { continue }
                body = JSONMerge.deepMerge(body, nested(keys, field.value))
            }
            return JSONMerge.deepMerge(extra, body)
        case .nestedJSONWithArrayMerge, .nestedJSONWithArrayOverwrite:
            var body = JSONValue.object([])
            for field in fields {
                let path = FieldNameSubscript.parse(field.name)
                guard !path.isEmpty else { continue }  // as above: never the whole body
                set(&body, path[...], field.value)
            }
            return JSONMerge.deepMerge(
                target: extra, source: body, arrays: policy == .nestedJSONWithArrayMerge ? .merge : .overwrite)
        }
    }

    /// `{k1: {k2: … value}}` (the legacy policy: no arrays).
    static func nested(_ keys: [String], _ value: JSONValue) -> JSONValue {
        keys.reversed().reduce(value) { inner, key in .object([(key, inner)]) }
    }

    /// Writes `value` at `path`: a key makes or enters an object, an index an array (padded with
    /// nulls up to it). The root is always an object.
    static func set(_ node: inout JSONValue, _ path: ArraySlice<FieldNameSubscript>, _ value: JSONValue) {
        guard let first = path.first else {
            node = value
            return
        }
        let rest = path.dropFirst()
        switch first {
        case let .key(key):
            var members: [(key: String, value: JSONValue)]
            if case let .object(m) = node { members = m } else { members = [] }
            if let i = members.firstIndex(where: { $0.key == key }) {
                var child = members[i].value
                if rest.isEmpty { child = value } else { prepare(&child, for: rest.first!); set(&child, rest, value) }
                members[i].value = child
            } else {
                var child = JSONValue.null
                if !rest.isEmpty { prepare(&child, for: rest.first!) }
                set(&child, rest, value)
                members.append((key, child))
            }
            node = .object(members)
        case let .index(index):
            var elements: [JSONValue]
            if case let .array(a) = node { elements = a } else { elements = [] }
            while elements.count <= index { elements.append(.null) }
            var child = elements[index]
            if !rest.isEmpty { prepare(&child, for: rest.first!) }
            set(&child, rest, value)
            elements[index] = child
            node = .array(elements)
        }
    }

    /// Makes `node` the container the next subscript needs, keeping it when it already is one.
    private static func prepare(_ node: inout JSONValue, for next: FieldNameSubscript) {
        switch (next, node) {
        case (.key, .object), (.index, .array): return
        case (.key, _): node = .object([])
        case (.index, _): node = .array([])
        }
    }
}
