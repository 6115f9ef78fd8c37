import CloakCore
import CloakVault

extension FormSchema {
    /// Checks that every field the form aliases can alias every value it accepts, for the callers
    /// that may submit it: a card number of each length of each brand the form takes, a CVC of
    /// each of their CVC lengths, an SSN's nine digits. A format-preserving alias whose free
    /// characters leave fewer than a million values is refused to callers without a token (they
    /// would fill the card's alias bucket), so an open form that aliases a 15-digit Amex with
    /// `FPE_SIX_T_FOUR` would refuse every Amex sale; the configuration is refused instead, with
    /// the fix named.
    func checkAliasCoverage(at path: String, openTokenize: Bool, _ r: ConfigReader) {
        let caller: AliasCaller = openTokenize ? .anonymous : .trusted
        for (i, field) in fields.enumerated() {
            guard let format = field.tokenization?.format else { continue }
            var lengths: [(length: Int, brands: [String])] = []
            func add(_ length: Int, _ brand: String) {
                if let at = lengths.firstIndex(where: { $0.length == length }) {
                    if !lengths[at].brands.contains(brand) { lengths[at].brands.append(brand) }
                } else {
                    lengths.append((length, [brand]))
                }
            }
            switch field.type {
            case .cardNumber: for model in brands.models { for n in model.cardNumberLengths { add(n, model.brand.id) } }
            case .cvc: for model in brands.models { for n in model.cvcLengths { add(n, model.brand.id) } }
            case .ssn: add(9, "ssn")
            default: continue
            }
            let refused = lengths.sorted { $0.length < $1.length }.compactMap { entry in
                Vault.refusal(format, digits: entry.length, caller: caller).map { (entry, $0) }
            }
            guard let (first, reason) = refused.first else { continue }
            let what = refused.map { "\($0.0.length) digits (\($0.0.brands.joined(separator: ", ")))" }
            r.issue(
                "\(path).fields[\(i)].tokenization.format",
                "\(format.rawValue) cannot alias \(what.joined(separator: "; ")): for \(first.length) digits "
                    + "\(reason). Fix: \(Self.fix(for: field.type, openTokenize: openTokenize))")
        }
    }

    private static func fix(for type: FieldType, openTokenize: Bool) -> String {
        let callers = openTokenize ? "; or set auth.open_tokenize: false (only token holders submit)" : ""
        switch type {
        case .cardNumber:
            return "use FPE_T_FOUR (keeps the length and last four; every card length from 12 digits) or UUID, "
                + "or list under card_brands.accepted only the brands this format serves" + callers
        case .ssn: return "use ALPHANUMERIC_SSN_T_FOUR (keeps the last four) or UUID" + callers
        default: return "use UUID (a CVC is best VOLATILE)" + callers
        }
    }
}
