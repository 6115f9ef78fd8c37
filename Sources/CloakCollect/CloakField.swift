/// One field of a ``CloakCollect`` form: its editing engine, shared by the collector and the view
/// that shows it. A text field hands every edit to ``replace(_:with:)`` and shows ``text`` with
/// the caret at ``caret``; the rules, the layout and the state are all here, and are the
/// server's own.
///
/// There is no accessor of the raw value: a submission sends it to Cloak, nowhere else.
/// `description`, `debugDescription` and `Mirror` show the field's name and type only.
public final class CloakField: @unchecked Sendable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    public let name: String
    public let configuration: CloakFieldConfiguration
    /// The form's collector; the field does nothing once it is gone.
    private weak var collect: CloakCollect?
    let index: Int

    init(name: String, index: Int, configuration: CloakFieldConfiguration, collect: CloakCollect) {
        self.name = name
        self.index = index
        self.configuration = configuration
        self.collect = collect
    }

    /// Applies one edit as a text field reports it: `range` in UTF-16 offsets of ``text`` (as
    /// `NSRange` gives them; an insertion is an empty range, a backspace the deleted character's
    /// range with empty `text`).
    public func replace(_ range: Range<Int>, with text: String) {
        collect?.edit(index) { $0.replace(range, with: text) }
    }

    /// The text to show: formatted in the field's pattern (card numbers by their brand's), or
    /// laid out in its mask (`(555)123-4567`).
    public var text: String { collect?.read(index) { $0.text } ?? "" }

    /// Where the caret goes after the last edit, in UTF-16 offsets of ``text``.
    public var caret: Int { collect?.read(index) { $0.caret } ?? 0 }

    public var state: CloakFieldState { collect?.state(of: index) ?? CloakFieldState() }

    public func setFocused(_ focused: Bool) { collect?.setFocused(index, focused) }

    public func clear() { collect?.edit(index) { $0.clear() } }

    /// Called after every change of the field's text or state (an edit, a clear, focus, the
    /// linked card's brand), on the thread that made the change.
    public var onChange: (@Sendable (CloakField) -> Void)? {
        get { collect?.observer(of: index) }
        set { collect?.setObserver(newValue, of: index) }
    }

    public var description: String { "CloakField(\(name), \(configuration.type))" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["name": name, "type": configuration.type]) }
}

/// How a field presents itself, from the served schema: what a view sets its accessibility
/// label, keyboard, secure entry and autofill hint from.
public struct CloakFieldConfiguration: Sendable, Equatable {
    public let name: String
    /// `cardNumber`, `cvc`, `expDate`, `ssn`, `cardHolderName`, `date` or `none`.
    public let type: String
    /// What a screen reader announces ("Card number").
    public let title: String
    /// The autofill hint as HTML names it: `cc-number`, `cc-exp`, `cc-csc`, `cc-name` or `off`.
    public let autocomplete: String
    /// Digits only: a number pad.
    public let isNumeric: Bool
    /// A CVC: shown as dots, kept out of keyboard caches.
    public let isSecureEntry: Bool
}
