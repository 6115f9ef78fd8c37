/// A value that must never be printed: a card number, CVC, SSN, a form's field text, a body.
///
/// Every way Swift turns a value into text (`description`, `debugDescription`, string
/// interpolation, `dump`, `Mirror`) shows `[redacted]`, so a stray log line, `print`, assertion
/// message or crash report cannot carry it. Code that needs the value reads ``value`` on purpose.
///
/// ```swift
/// let pan = Sensitive("4111111111111111")
/// "\(pan)"          // "[redacted]"
/// pan.value         // "4111111111111111"
/// ```
public struct Sensitive<Value: Sendable>: Sendable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    public var value: Value

    @inlinable public init(_ value: Value) { self.value = value }

    public var description: String { "[redacted]" }
    public var debugDescription: String { "[redacted]" }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}

extension Sensitive: Equatable where Value: Equatable {}
extension Sensitive: Hashable where Value: Hashable {}
