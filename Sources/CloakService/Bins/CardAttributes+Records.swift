import CloakCore
import CloakVault

/// A card's attributes kept with its record (issue 48): under the metadata key
/// ``CardAttributes/metadataKey`` (a namespace the Vault API refuses to callers), shown as the
/// record's `attributes` (``RevealedRecord``), never as metadata.
extension CardAttributes {
    /// The digits of a card an alias shows at most (`FPE_SIX_T_FOUR`'s BIN): the attributes a
    /// caller without `aliases:reveal` gets are looked up by no more.
    static let aliasShownDigits = 6

    /// `request` with its card's attributes in its metadata, when its value is a card number
    /// (12 to 19 digits, spaces and dashes aside, Luhn-valid) that a range of `table` holds.
    static func stored(on request: AliasRequest, from table: BinTable) -> AliasRequest {
        guard let attributes = ofCard(request.value, in: table) else { return request }
        var request = request
        request.metadata[RevealedRecord.attributesKey] = String(
            decoding: JSONWriter.encode(attributes.json), as: UTF8.self)
        return request
    }

    /// The attributes of `value` when it is a card number (12 to 19 digits, spaces and dashes
    /// aside, Luhn-valid), looked up by its BIN as a field state shows it (8 digits for a brand
    /// with eight-digit BINs and 16 digits or more, else 6) and never more: whoever sees them
    /// learns no more of the number than a state shows, however specific the table's ranges.
    /// `shownDigits` lowers that bound for a caller who sees only an alias: an
    /// `FPE_SIX_T_FOUR` alias shows six digits, and the issuer of an 8-digit range names the
    /// two after them (a guess bucket of 10^5 cards would become 10^3; issue 55, item 4).
    static func ofCard(_ value: String, in table: BinTable, shownDigits: Int = 8) -> CardAttributes? {
        let digits = value.utf8.filter { $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: "-") }
        guard (12...19).contains(digits.count),
            digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
        else { return nil }
        let number = String(decoding: digits, as: UTF8.self)
        guard Luhn.isValid(number) else { return nil }
        let eight = CardBrandTable.standard.detect(number).brand.hasEightDigitBIN && digits.count >= 16
        return table.lookup(digits.prefix(min(eight ? 8 : 6, shownDigits)))
    }
}
