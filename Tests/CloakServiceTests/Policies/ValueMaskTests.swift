import Testing

@testable import CloakService

/// Masks that stay masks (issue 77): the value's shape kept, at least five characters hidden,
/// and a value that does not fit redacted, never shown.
struct ValueMaskTests {
    @Test(arguments: [
        (ValueMask.last4, "4111111111111111", "************1111"),
        (.last4, "4111 1111 1111 1111", "**** **** **** 1111"),
        (.last4, "123456789", "*****6789"),
        // Fewer than five would stay hidden.
        (.last4, "12345678", ValueMask.redacted),
        (.binLast4, "4111111111111111", "411111******1111"),
        (.binLast4, "378282246310005", "378282*****0005"),
        // A 14-digit Diners leaves four hidden: redacted.
        (.binLast4, "36227206271667", ValueMask.redacted),
        (.pattern("***-**-####"), "123-45-6789", "***-**-6789"),
        (.pattern("***-**-####"), "123456789", ValueMask.redacted),
        (.pattern("***-**-####"), "123-45-678", ValueMask.redacted),
        (.pattern("***-**-####"), "12a-45-6789", "***-**-6789"),
        (.pattern("***-**-####"), "1-3-45-6789", ValueMask.redacted),
        (.pattern("**-####"), "12-6789", ValueMask.redacted),
        // last4 and bin_last4 read digits and separators only: a letter or another script's
        // digit would pass unmasked (an IBAN, free text), so such a value is redacted.
        (.last4, "GB82WEST12345698765432", ValueMask.redacted),
        (.last4, "call 4111111111111111", ValueMask.redacted),
        (.binLast4, "4111-1111-1111-1111", "4111-11**-****-1111"),
        (.last4, "٤١١١١١١١١١١١١١١١", ValueMask.redacted),
    ])
    func masks(_ mask: ValueMask, _ value: String, _ expected: String) {
        #expect(mask.apply(value) == expected)
    }

    @Test func namesReadFromAConfiguration() {
        #expect(ValueMask(name: "last4") == .last4)
        #expect(ValueMask(name: "bin_last4") == .binLast4)
        #expect(ValueMask(name: "***-**-####") == .pattern("***-**-####"))
        for bad in ["", "first6", "####", "*****", "***<script>##", String(repeating: "*#", count: 40)] {
            #expect(ValueMask(name: bad) == nil, "\(bad)")
        }
    }

    @Test func theStrictestTransformShowsTheFewestCharacters() {
        let order: [ValueTransform] = [
            .redact, .mask(.last4), .mask(.pattern("***-**-####")), .mask(.binLast4), .plain,
        ]
        for (i, a) in order.enumerated() {
            for b in order[i...] { #expect(a.isAtLeastAsStrict(as: b), "\(a) vs \(b)") }
        }
        #expect(!ValueTransform.plain.isAtLeastAsStrict(as: .redact))
        // Two patterns that show as many characters: one order, by their text, whichever comes first.
        let (a, b) = (ValueTransform.mask(.pattern("***-**-####")), ValueTransform.mask(.pattern("####-**-***")))
        #expect(a.isAtLeastAsStrict(as: b) != b.isAtLeastAsStrict(as: a))
    }
}
