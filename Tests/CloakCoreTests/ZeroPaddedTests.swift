import CloakCore
import Testing

/// Fixed-width digits for dates and timestamps, against `%0Nd`.
@Suite struct ZeroPaddedTests {
    static func text(_ value: Int, _ width: Int) -> String {
        var out = [UInt8](repeating: 0, count: width)
        out.withUnsafeMutableBufferPointer { ZeroPadded.write(value, width: width, to: $0.baseAddress!) }
        return String(decoding: out, as: UTF8.self)
    }

    @Test func matchesPrintfAndKeepsTheLastDigits() {
        for width in 1...6 {
            for value in [0, 1, 9, 10, 59, 99, 100, 999, 1970, 9999, 12_345, 999_999] {
                let padded = String(repeating: "0", count: max(0, width - String(value).count)) + String(value)
                #expect(Self.text(value, width) == String(padded.suffix(width)))  // the last `width` digits
            }
        }
        // A negative value writes its magnitude's digits: never a byte that is not a digit.
        #expect(Self.text(-7, 2) == "07")
        #expect(Self.text(Int.min, 3) == "808")
    }
}
