import CloakTesting
import Foundation

/// Cards, bodies and headers the service's tests share: Luhn-valid numbers of one BIN and last
/// four, a `POST /aliases` body, the aliases of an answer and a bearer header.
enum TestCards {
    static func bearer(_ token: String) -> [(String, String)] { [("Authorization", "Bearer \(token)")] }

    static func aliases(_ r: RawHTTPClient.Response) -> [String] {
        ((r.json?["data"] as? [[String: Any]]) ?? []).compactMap {
            (($0["aliases"] as? [[String: Any]])?.first?["alias"] as? String)
        }
    }

    /// Luhn-valid 16-digit cards sharing BIN 411111 and last four 1111 (the middle varies).
    static func cards(_ count: Int, from start: Int = 0) -> [String] {
        var out: [String] = []
        var middle = start
        while out.count < count {
            let digits = "411111" + String(format: "%05d", middle) + "1111"
            middle += 1
            // One check digit at position 11 (0-based) makes the whole number Luhn-valid.
            for d in 0...9 {
                let candidate = digits.prefix(11) + String(d) + "1111"
                if luhn(String(candidate)) { out.append(String(candidate)); break }
            }
        }
        return out
    }

    static func luhn(_ s: String) -> Bool {
        let digits = s.compactMap { $0.wholeNumberValue }
        var sum = 0
        for (i, d) in digits.reversed().enumerated() { sum += i % 2 == 1 ? (d * 2 > 9 ? d * 2 - 9 : d * 2) : d }
        return sum % 10 == 0
    }

    static func body(_ values: [String], format: String = "FPE_SIX_T_FOUR") -> String {
        #"{"data":["# + values.map { #"{"value":"\#($0)","format":"\#(format)"}"# }.joined(separator: ",") + "]}"
    }
}
