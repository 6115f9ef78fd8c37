import CLibPQ

extension PostgreSQLConnection {
    /// A parameter, sent in PostgreSQL's binary format: never quoted into SQL text.
    enum Value {
        case text(String)
        case bytes([UInt8])
        case int(Int64)
        case null
        case bool(Bool)
        /// `text[]`, `bytea[]` and `int8[]`: a column of many rows in one parameter (`unnest`).
        case texts([String?])
        case byteStrings([[UInt8]?])
        case ints([Int64?])

        /// The parameter's type OID and its binary form (nil: NULL).
        var encoded: (type: Oid, bytes: [UInt8]?) {
            switch self {
            case let .text(s): return (25, Array(s.utf8))
            case let .bytes(b): return (17, b)
            case let .int(i): return (20, Self.int8(i))
            case .null: return (0, nil)
            case let .bool(b): return (16, [b ? 1 : 0])
            case let .texts(items): return (1009, Self.array(elementType: 25, items.map { $0.map { Array($0.utf8) } }))
            case let .byteStrings(items): return (1001, Self.array(elementType: 17, items))
            case let .ints(items): return (1016, Self.array(elementType: 20, items.map { $0.map(Self.int8) }))
            }
        }

        private static func int8(_ value: Int64) -> [UInt8] { withUnsafeBytes(of: value.bigEndian) { Array($0) } }

        private static func append(_ value: Int32, to out: inout [UInt8]) {
            withUnsafeBytes(of: value.bigEndian) { out.append(contentsOf: $0) }
        }

        /// A one-dimensional array in `array_recv`'s format: dimensions, a null flag, the element
        /// type, then each element as its length (-1: NULL) and bytes.
        static func array(elementType: Oid, _ elements: [[UInt8]?]) -> [UInt8] {
            var out: [UInt8] = []
            out.reserveCapacity(20 + elements.reduce(0) { $0 + 4 + ($1?.count ?? 0) })
            append(elements.isEmpty ? 0 : 1, to: &out)
            append(elements.contains { $0 == nil } ? 1 : 0, to: &out)
            append(Int32(bitPattern: elementType), to: &out)
            if !elements.isEmpty {
                append(Int32(elements.count), to: &out)
                append(1, to: &out)  // lower bound
            }
            for element in elements {
                guard let element else {
                    append(-1, to: &out)
                    continue
                }
                append(Int32(element.count), to: &out)
                out.append(contentsOf: element)
            }
            return out
        }
    }

    /// Calls `body` with libpq's parameter arrays for `parameters`: types, values, lengths and
    /// formats (all binary). The values' storage stays put for the call: one contiguous copy each.
    static func withParameters<T, E: Error>(
        _ parameters: [Value],
        _ body: (
            _ types: [Oid], _ values: UnsafePointer<UnsafePointer<CChar>?>?, _ lengths: [Int32], _ formats: [Int32]
        ) throws(E) -> T
    ) throws(E) -> T {
        let encoded = parameters.map(\.encoded)
        let lengths = encoded.map { Int32($0.bytes?.count ?? 0) }
        let formats = [Int32](repeating: 1, count: parameters.count)
        let pointers: [UnsafeMutablePointer<CChar>?] = encoded.map { item in
            guard let buffer = item.bytes else { return nil }
            let p = UnsafeMutablePointer<CChar>.allocate(capacity: max(buffer.count, 1))
            buffer.withUnsafeBytes { raw in
                if let base = raw.baseAddress, raw.count > 0 {
                    UnsafeMutableRawPointer(p).copyMemory(from: base, byteCount: raw.count)
                }
            }
            return p
        }
        defer { pointers.forEach { $0?.deallocate() } }
        let constPointers = pointers.map { UnsafePointer($0) }
        let types = encoded.map(\.type)
        return try constPointers.withUnsafeBufferPointer { values throws(E) in
            try body(types, values.baseAddress, lengths, formats)
        }
    }

    /// The rows of a successful result, columns in binary.
    static func rows(of result: OpaquePointer) -> [Row] {
        var rows: [Row] = []
        let count = Int(PQntuples(result)), fields = Int(PQnfields(result))
        rows.reserveCapacity(count)
        for r in 0..<count {
            var columns: [[UInt8]?] = []
            columns.reserveCapacity(fields)
            for c in 0..<fields {
                if PQgetisnull(result, Int32(r), Int32(c)) == 1 {
                    columns.append(nil)
                    continue
                }
                let length = Int(PQgetlength(result, Int32(r), Int32(c)))
                let value = PQgetvalue(result, Int32(r), Int32(c))!
                columns.append(
                    value.withMemoryRebound(to: UInt8.self, capacity: length) {
                        Array(UnsafeBufferPointer(start: $0, count: length))
                    })
            }
            rows.append(Row(columns: columns))
        }
        return rows
    }
}
