/// The `{name}` parameters a path resolved with, by name.
///
/// A route has one or two of them, so they are kept in order in a small array and found by
/// comparing names: cheaper than hashing into a dictionary on every request.
public struct RouteParameters: Sendable, Equatable, ExpressibleByDictionaryLiteral {
    private var pairs: [(name: String, value: String)] = []

    public init() {}

    public init(dictionaryLiteral elements: (String, String)...) {
        for (name, value) in elements { self[name] = value }
    }

    public var count: Int { pairs.count }

    /// The value of parameter `name`; setting nil removes it.
    public subscript(name: String) -> String? {
        get { pairs.first { $0.name == name }?.value }
        set { _ = update(name, to: newValue) }
    }

    /// Sets `name` to `value` (nil removes it) and returns what it held before.
    @discardableResult
    mutating func update(_ name: String, to value: String?) -> String? {
        guard let i = pairs.firstIndex(where: { $0.name == name }) else {
            if let value { pairs.append((name, value)) }
            return nil
        }
        let previous = pairs[i].value
        if let value { pairs[i].value = value } else { pairs.remove(at: i) }
        return previous
    }

    public static func == (a: RouteParameters, b: RouteParameters) -> Bool {
        a.count == b.count && a.pairs.allSatisfy { b[$0.name] == $0.value }
    }
}
