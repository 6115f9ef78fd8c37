import CloakCore
import CloakVault

/// A card's attributes kept with its record (issue 48): under the metadata key
/// ``CardAttributes/metadataKey`` (a namespace the Vault API refuses to callers), shown as the
/// record's `attributes` (``RevealedRecord``), never as metadata.
extension CardAttributes {
    /// `request` with its card's attributes in its metadata, when its value is a card number
    /// (12 to 19 digits, spaces and dashes aside, Luhn-valid) that a range of `table` holds.
    static func stored(on request: AliasRequest, from table: BinTable) -> AliasRequest {
        let digits = request.value.utf8.filter { $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: "-") }
        guard (12...19).contains(digits.count),
            digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
            Luhn.isValid(String(decoding: digits, as: UTF8.self)),
            let attributes = table.lookup(digits)
        else { return request }
        var request = request
        request.metadata[RevealedRecord.attributesKey] = String(
            decoding: JSONWriter.encode(attributes.json), as: UTF8.self)
        return request
    }
}
