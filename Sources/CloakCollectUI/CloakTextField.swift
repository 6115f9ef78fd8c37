#if canImport(UIKit)
    import UIKit
    import CloakCollect

    /// A single-line input bound to one `CloakField`.
    ///
    /// The view owns a private `UITextField` and acts as its delegate. Every edit is
    /// handed to the field (`CloakField.replace(_:with:)`); the view then shows
    /// whatever the field reports as `text` and puts the caret where the field says.
    /// Formatting, validation and state live in `CloakCollect`, not here.
    ///
    /// The view adds no way to read the value: it has no `text` property and the
    /// inner `UITextField` is private.
    public final class CloakTextField: UIView, UITextFieldDelegate {
        /// The field this view edits.
        public let field: CloakField

        private let textField = UITextField()

        /// Called on the main queue after the field changed. Used by composite
        /// views in this module (for example the card brand icon).
        var onFieldChange: (@MainActor () -> Void)?

        /// Text shown while the field is empty.
        public var placeholder: String? {
            get { textField.placeholder }
            set { textField.placeholder = newValue }
        }

        /// Font of the entered text.
        public var font: UIFont? {
            get { textField.font }
            set {
                textField.font = newValue
                invalidateIntrinsicContentSize()
            }
        }

        /// Color of the entered text.
        public var textColor: UIColor? {
            get { textField.textColor }
            set { textField.textColor = newValue }
        }

        /// Border style of the inner text field. Defaults to `.none`.
        public var borderStyle: UITextField.BorderStyle {
            get { textField.borderStyle }
            set { textField.borderStyle = newValue }
        }

        /// Creates a view that edits `field`.
        ///
        /// Keyboard, content type, secure entry and accessibility label are taken
        /// from `field.configuration`, which comes from the server's form schema.
        public init(field: CloakField) {
            self.field = field
            super.init(frame: .zero)
            textField.delegate = self
            textField.translatesAutoresizingMaskIntoConstraints = false
            addSubview(textField)
            NSLayoutConstraint.activate([
                textField.leadingAnchor.constraint(equalTo: leadingAnchor),
                textField.trailingAnchor.constraint(equalTo: trailingAnchor),
                textField.topAnchor.constraint(equalTo: topAnchor),
                textField.bottomAnchor.constraint(equalTo: bottomAnchor),
            ])
            textField.addAction(
                UIAction { [weak self] _ in
                    self?.textChangedOutsideDelegate()
                }, for: .editingChanged)
            apply(field.configuration)
            textField.text = field.text
            observeField()
        }

        @available(*, unavailable)
        required init?(coder: NSCoder) {
            fatalError("CloakTextField is created in code with init(field:)")
        }

        /// Clears the value. Delegates to `CloakField.clear()`.
        public func clear() {
            field.clear()
            syncFromField()
        }

        public override var intrinsicContentSize: CGSize {
            CGSize(width: UIView.noIntrinsicMetric, height: textField.intrinsicContentSize.height)
        }

        public override var canBecomeFirstResponder: Bool { textField.canBecomeFirstResponder }

        public override var isFirstResponder: Bool { textField.isFirstResponder }

        @discardableResult
        public override func becomeFirstResponder() -> Bool { textField.becomeFirstResponder() }

        @discardableResult
        public override func resignFirstResponder() -> Bool { textField.resignFirstResponder() }

        // MARK: UITextFieldDelegate

        /// Hands the edit to the field and shows the field's result. Always returns
        /// `false`: the text field never applies an edit by itself.
        public func textField(
            _ textField: UITextField,
            shouldChangeCharactersIn range: NSRange,
            replacementString string: String
        ) -> Bool {
            guard textField === self.textField, range.location != NSNotFound else { return false }
            field.replace(range.location..<range.location + range.length, with: string)
            textField.text = field.text
            placeCaret(at: field.caret)
            onFieldChange?()
            return false
        }

        public func textFieldDidBeginEditing(_ textField: UITextField) { field.setFocused(true) }

        public func textFieldDidEndEditing(_ textField: UITextField) { field.setFocused(false) }

        public func textFieldShouldReturn(_ textField: UITextField) -> Bool {
            textField.resignFirstResponder()
            return true
        }

        // MARK: Private

        private func apply(_ configuration: CloakFieldConfiguration) {
            textField.accessibilityLabel = configuration.title
            textField.textContentType = Self.contentType(for: configuration.autocomplete)
            textField.keyboardType = configuration.isNumeric ? .numberPad : .default
            textField.isSecureTextEntry = configuration.isSecureEntry
            // Keep the keyboard from learning or rewriting what is typed here.
            textField.autocorrectionType = .no
            textField.spellCheckingType = .no
            textField.smartDashesType = .no
            textField.smartQuotesType = .no
            textField.smartInsertDeleteType = .no
            textField.autocapitalizationType = configuration.type == "cardHolderName" ? .words : .none
        }

        /// Maps an HTML `autocomplete` token to a UIKit content type for AutoFill.
        private static func contentType(for autocomplete: String) -> UITextContentType? {
            switch autocomplete {
            case "cc-number":
                return .creditCardNumber
            case "cc-exp":
                if #available(iOS 17.0, tvOS 17.0, *) { return .creditCardExpiration }
                return nil
            case "cc-csc":
                if #available(iOS 17.0, tvOS 17.0, *) { return .creditCardSecurityCode }
                return nil
            case "cc-name":
                if #available(iOS 17.0, tvOS 17.0, *) { return .creditCardName }
                return nil
            default:
                return nil
            }
        }

        /// Keeps the view current when the field changes from elsewhere, such as
        /// `clear()` on the field itself. Chains any handler already installed.
        private func observeField() {
            let previous = field.onChange
            field.onChange = { [weak self] changed in
                previous?(changed)
                DispatchQueue.main.async { [weak self] in
                    self?.syncFromField()
                }
            }
        }

        private func syncFromField() {
            let current = field.text
            if textField.text != current {
                textField.text = current
                placeCaret(at: field.caret)
            }
            onFieldChange?()
        }

        /// AutoFill and dictation can set the text without asking the delegate.
        /// Hand the whole shown text to the field and show its result instead.
        private func textChangedOutsideDelegate() {
            guard textField.markedTextRange == nil else { return }
            let shown = textField.text ?? ""
            let current = field.text
            guard shown != current else { return }
            field.replace(0..<current.utf16.count, with: shown)
            textField.text = field.text
            placeCaret(at: field.caret)
            onFieldChange?()
        }

        /// `offset` is in UTF-16 code units, as `UITextInput` counts them.
        private func placeCaret(at offset: Int) {
            guard let position = textField.position(from: textField.beginningOfDocument, offset: offset)
            else { return }
            textField.selectedTextRange = textField.textRange(from: position, to: position)
        }
    }
#endif
