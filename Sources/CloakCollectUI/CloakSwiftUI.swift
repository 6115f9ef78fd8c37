#if canImport(UIKit)
    import UIKit
    import SwiftUI
    import CloakCollect

    /// SwiftUI wrapper around `CloakTextField` (or `CloakCardTextField` for card
    /// number fields).
    ///
    /// The wrapped view is bound to one field for its whole life. If the same
    /// position in your view tree can show different fields, give each its own
    /// identity, for example `.id(field.name)`.
    ///
    /// ```swift
    /// CloakTextFieldView(field: cardNumber, placeholder: "Card number")
    ///     .frame(height: 44)
    /// ```
    public struct CloakTextFieldView: UIViewRepresentable {
        private let field: CloakField
        private let placeholder: String?

        /// - Parameters:
        ///   - field: A field from `CloakCollect.field(_:)`.
        ///   - placeholder: Text shown while the field is empty.
        public init(field: CloakField, placeholder: String? = nil) {
            self.field = field
            self.placeholder = placeholder
        }

        /// Card number fields get the brand icon; every other type a plain input.
        public func makeUIView(context: Context) -> UIView {
            if field.configuration.type == "cardNumber" {
                let view = CloakCardTextField(field: field)
                view.placeholder = placeholder
                return view
            }
            let view = CloakTextField(field: field)
            view.placeholder = placeholder
            return view
        }

        public func updateUIView(_ uiView: UIView, context: Context) {
            if let view = uiView as? CloakCardTextField {
                view.placeholder = placeholder
            } else if let view = uiView as? CloakTextField {
                view.placeholder = placeholder
            }
        }
    }

    /// SwiftUI wrapper around `CloakLabel`.
    ///
    /// ```swift
    /// CloakLabelView(value: revealed, masked: !showNumber)
    /// ```
    public struct CloakLabelView: UIViewRepresentable {
        private let value: CloakRevealedValue?
        private let masked: Bool
        private let mask: String

        /// - Parameters:
        ///   - value: A value from `CloakReveal.reveal(alias:)`, or `nil` for an
        ///     empty label.
        ///   - masked: `true` shows `value.masked(mask)`, `false` the clear value.
        ///   - mask: Pattern for the masked form.
        public init(value: CloakRevealedValue?, masked: Bool, mask: String = CloakLabel.defaultMask) {
            self.value = value
            self.masked = masked
            self.mask = mask
        }

        public func makeUIView(context: Context) -> CloakLabel {
            let label = CloakLabel(frame: .zero)
            label.setContentHuggingPriority(.defaultHigh, for: .vertical)
            return label
        }

        public func updateUIView(_ uiView: CloakLabel, context: Context) {
            guard let value else {
                uiView.clear()
                return
            }
            uiView.show(value, mask: mask)
            if !masked {
                uiView.reveal()
            }
        }
    }
#endif
