/// CRC-32C (Castagnoli, the polynomial iSCSI, ext4 and PostgreSQL's WAL use): the check that
/// finds a record torn by a crash mid-write. Not a MAC: anyone can recompute it.
package enum CRC32C {
    /// The checksum of `bytes` (reflected, initial and final value 0xFFFFFFFF: `"123456789"`
    /// gives 0xE3069283).
    package static func checksum(_ bytes: ArraySlice<UInt8>) -> UInt32 {
        bytes.withUnsafeBufferPointer { buffer in
            table.withUnsafeBufferPointer { table in
                var crc: UInt32 = 0xFFFF_FFFF
                for byte in buffer { crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
                return crc ^ 0xFFFF_FFFF
            }
        }
    }

    package static func checksum(_ bytes: [UInt8]) -> UInt32 { checksum(bytes[...]) }

    private static let table: [UInt32] = (0..<256).map { index in
        var crc = UInt32(index)
        for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
        return crc
    }
}
