#if canImport(UIKit)
    import UIKit
    import CloakCollect

    /// A card number input: a `CloakTextField` with a brand icon in front of it.
    ///
    /// The brand comes from `field.state.cardBrand`, which `CloakCollect` detects
    /// as the number is typed. The icon is refreshed whenever the field changes.
    /// Supply your own artwork through `brandImage`.
    public final class CloakCardTextField: UIView {
        /// The field this view edits.
        public var field: CloakField { input.field }

        private let input: CloakTextField
        private let brandView = UIImageView()
        private let stack = UIStackView()

        /// Returns the icon for a brand identifier such as `"visa"`,
        /// `"mastercard"`, `"amex"` or `"unknown"` (used while no brand is
        /// detected). The default shows the SF Symbol `creditcard` for every brand.
        public var brandImage: (String) -> UIImage? = { _ in UIImage(systemName: "creditcard") } {
            didSet { refreshBrand() }
        }

        /// Text shown while the field is empty.
        public var placeholder: String? {
            get { input.placeholder }
            set { input.placeholder = newValue }
        }

        /// Font of the entered text.
        public var font: UIFont? {
            get { input.font }
            set { input.font = newValue }
        }

        /// Color of the entered text.
        public var textColor: UIColor? {
            get { input.textColor }
            set { input.textColor = newValue }
        }

        /// Tint applied to template brand images (such as SF Symbols).
        public var brandTintColor: UIColor! {
            get { brandView.tintColor }
            set { brandView.tintColor = newValue }
        }

        /// Width of the brand icon, in points. Defaults to 32.
        public var brandIconWidth: CGFloat {
            get { brandWidth.constant }
            set { brandWidth.constant = newValue }
        }

        private lazy var brandWidth = brandView.widthAnchor.constraint(equalToConstant: 32)

        /// Creates a card number view for `field` (normally the schema field of
        /// type `cardNumber`).
        public init(field: CloakField) {
            input = CloakTextField(field: field)
            super.init(frame: .zero)

            brandView.contentMode = .scaleAspectFit
            brandView.setContentHuggingPriority(.required, for: .horizontal)
            brandView.setContentCompressionResistancePriority(.required, for: .horizontal)

            stack.axis = .horizontal
            stack.alignment = .center
            stack.spacing = 8
            stack.translatesAutoresizingMaskIntoConstraints = false
            stack.addArrangedSubview(brandView)
            stack.addArrangedSubview(input)
            addSubview(stack)
            NSLayoutConstraint.activate([
                brandWidth,
                stack.leadingAnchor.constraint(equalTo: leadingAnchor),
                stack.trailingAnchor.constraint(equalTo: trailingAnchor),
                stack.topAnchor.constraint(equalTo: topAnchor),
                stack.bottomAnchor.constraint(equalTo: bottomAnchor),
            ])

            input.onFieldChange = { [weak self] in
                self?.refreshBrand()
            }
            refreshBrand()
        }

        @available(*, unavailable)
        required init?(coder: NSCoder) {
            fatalError("CloakCardTextField is created in code with init(field:)")
        }

        /// Clears the value. Delegates to `CloakField.clear()`.
        public func clear() {
            input.clear()
        }

        public override var intrinsicContentSize: CGSize { input.intrinsicContentSize }

        public override var canBecomeFirstResponder: Bool { input.canBecomeFirstResponder }

        public override var isFirstResponder: Bool { input.isFirstResponder }

        @discardableResult
        public override func becomeFirstResponder() -> Bool { input.becomeFirstResponder() }

        @discardableResult
        public override func resignFirstResponder() -> Bool { input.resignFirstResponder() }

        /// Shows the icon for the field's current brand. The icon's accessibility
        /// label is the brand's display name; it never contains digits.
        private func refreshBrand() {
            let state = input.field.state
            brandView.image = brandImage(state.cardBrand ?? "unknown")
            brandView.accessibilityLabel = state.cardBrandName
            brandView.isAccessibilityElement = state.cardBrandName != nil
        }
    }
#endif
