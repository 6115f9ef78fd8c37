/// The BIN table as the store keeps it (issue 48): compact and read without parsing text, so a
/// node builds a table of 350,000 ranges from about 11 MiB, not 23 MiB of CSV.
///
/// ```
/// "CLOAKBIN1\n"
/// u32 attribute count, then each: u32 length, its JSON (CardAttributes.json)
/// u32 row count, then each: u8 digits, u64 low, u64 high, u32 attribute index
/// ```
/// Integers little-endian. Only a table ``BinTableReader`` accepted is written; reading checks
/// every bound and index again all the same (a damaged document is refused, never trusted).
extension BinTableReader.Table {
    static let magic = Array("CLOAKBIN1\n".utf8)

    /// The table's bytes as the store keeps them.
    public func encoded() -> [UInt8] {
        var out = Self.magic
        out.reserveCapacity(Self.magic.count + rows.count * 21 + attributes.count * 96 + 8)
        func u32(_ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { out += $0 } }
        func u64(_ v: UInt64) { withUnsafeBytes(of: v.littleEndian) { out += $0 } }
        u32(UInt32(attributes.count))
        for attributes in attributes {
            let json = JSONWriter.encode(attributes.json)
            u32(UInt32(json.count))
            out += json
        }
        u32(UInt32(rows.count))
        for row in rows {
            out.append(row.length)
            u64(row.low)
            u64(row.high)
            u32(row.attributes)
        }
        return out
    }

    /// Reads ``encoded()`` bytes; nil for anything else (wrong magic, cut short, an index or a
    /// bound out of range, attributes that are not Cloak's, bytes left over).
    public init?(decoding bytes: [UInt8]) {
        guard bytes.count >= Self.magic.count, bytes[..<Self.magic.count].elementsEqual(Self.magic) else { return nil }
        var offset = Self.magic.count
        func u32() -> UInt32? {
            guard offset + 4 <= bytes.count else { return nil }
            defer { offset += 4 }
            return bytes[offset..<offset + 4].reversed().reduce(0) { $0 << 8 | UInt32($1) }
        }
        func u64() -> UInt64? {
            guard offset + 8 <= bytes.count else { return nil }
            defer { offset += 8 }
            return bytes[offset..<offset + 8].reversed().reduce(0) { $0 << 8 | UInt64($1) }
        }
        self.init()
        guard let attributeCount = u32(), Int(attributeCount) <= bytes.count else { return nil }
        attributes.reserveCapacity(Int(attributeCount))
        for _ in 0..<attributeCount {
            guard let length = u32(), offset + Int(length) <= bytes.count,
                let json = try? JSONParser().parse(Array(bytes[offset..<offset + Int(length)])),
                let parsed = CardAttributes(json: json)
            else { return nil }
            offset += Int(length)
            attributes.append(parsed)
        }
        guard let rowCount = u32(), Int(rowCount) * 21 == bytes.count - offset else { return nil }
        rows.reserveCapacity(Int(rowCount))
        var limit: [UInt64] = [1]
        for _ in 0..<BinTable.longestRange { limit.append(limit.last! &* 10) }
        for _ in 0..<rowCount {
            let length = bytes[offset]
            offset += 1
            guard (BinTable.shortestRange...BinTable.longestRange).contains(Int(length)), let low = u64(),
                let high = u64(), let index = u32(), low <= high, index < attributeCount,
                Int(length) == BinTable.longestRange || high < limit[Int(length)]
            else { return nil }
            rows.append(BinTableReader.Row(line: 0, length: length, low: low, high: high, attributes: index))
        }
    }
}
