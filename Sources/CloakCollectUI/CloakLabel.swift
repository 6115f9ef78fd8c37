#if canImport(UIKit)
    import UIKit
    import CloakCollect

    /// Displays a value returned by `CloakReveal`, masked until you ask otherwise.
    ///
    /// The view keeps the `CloakRevealedValue`, not a `String`. The clear text is
    /// produced only inside `reveal()`, and only to hand it to the inner label.
    /// VoiceOver always reads the masked text, even while the value is revealed.
    public final class CloakLabel: UIView {
        /// The mask used by `show(_:mask:)` when none is given: every character
        /// hidden except the last four.
        public nonisolated static let defaultMask = "•••• •••• •••• ####"

        private let label = UILabel()
        private var value: CloakRevealedValue?
        private var mask: String?

        /// Whether the clear value is currently shown.
        public private(set) var isRevealed = false

        /// Font of the displayed text.
        public var font: UIFont! {
            get { label.font }
            set {
                label.font = newValue
                invalidateIntrinsicContentSize()
            }
        }

        /// Color of the displayed text.
        public var textColor: UIColor! {
            get { label.textColor }
            set { label.textColor = newValue }
        }

        /// Alignment of the displayed text.
        public var textAlignment: NSTextAlignment {
            get { label.textAlignment }
            set { label.textAlignment = newValue }
        }

        public override init(frame: CGRect) {
            super.init(frame: frame)
            label.translatesAutoresizingMaskIntoConstraints = false
            addSubview(label)
            NSLayoutConstraint.activate([
                label.leadingAnchor.constraint(equalTo: leadingAnchor),
                label.trailingAnchor.constraint(equalTo: trailingAnchor),
                label.topAnchor.constraint(equalTo: topAnchor),
                label.bottomAnchor.constraint(equalTo: bottomAnchor),
            ])
        }

        @available(*, unavailable)
        required init?(coder: NSCoder) {
            fatalError("CloakLabel is created in code")
        }

        public override var intrinsicContentSize: CGSize { label.intrinsicContentSize }

        /// Starts displaying `value`, masked.
        ///
        /// - Parameters:
        ///   - value: A value from `CloakReveal.reveal(alias:)`.
        ///   - mask: Pattern passed to `CloakRevealedValue.masked(_:)`. With `nil`
        ///     the label stays empty until `reveal()` is called.
        public func show(_ value: CloakRevealedValue, mask: String? = CloakLabel.defaultMask) {
            self.value = value
            self.mask = mask
            hide()
        }

        /// Shows the value in clear. Does nothing if no value is set.
        public func reveal() {
            guard let value else { return }
            label.text = value.withValue { $0 }
            label.accessibilityLabel = maskedText(of: value)
            isRevealed = true
        }

        /// Shows the masked form again (or nothing, if the mask is `nil`).
        public func hide() {
            let masked = value.map(maskedText(of:))
            label.text = masked
            label.accessibilityLabel = masked
            isRevealed = false
        }

        /// Forgets the value and empties the label.
        public func clear() {
            value = nil
            mask = nil
            hide()
        }

        private func maskedText(of value: CloakRevealedValue) -> String {
            guard let mask else { return "" }
            return value.masked(mask)
        }
    }
#endif
