/// The SDK's two deep merges.
public enum JSONMerge {
    public enum ArrayPolicy: Sendable { case merge, overwrite }

    /// `deepMerge(d1, d2)` (Utils.swift): objects merge recursively; otherwise d2 wins.
    public static func deepMerge(_ d1: JSONValue, _ d2: JSONValue) -> JSONValue {
        guard case let .object(a) = d1, case let .object(b) = d2 else { return d2 }
        var members = a
        for (key, value) in b {
            if let i = members.firstIndex(where: { $0.key == key }) {
                members[i].value = deepMerge(members[i].value, value)
            } else {
                members.append((key, value))
            }
        }
        return .object(members)
    }

    /// `VGSDeepMergeUtils.deepMerge(target:source:mergeArrayPolicy:)`: objects merge
    /// recursively, arrays merge or are overwritten by the source, anything else: the source wins.
    public static func deepMerge(target: JSONValue, source: JSONValue, arrays: ArrayPolicy) -> JSONValue {
        switch (target, source) {
        case let (.object(t), .object(s)):
            var members = t
            for (key, value) in s {
                if let i = members.firstIndex(where: { $0.key == key }) {
                    members[i].value = deepMerge(target: members[i].value, source: value, arrays: arrays)
                } else {
                    members.append((key, value))
                }
            }
            return .object(members)
        case let (.array(t), .array(s)):
            return arrays == .overwrite ? .array(s) : .array(deepArrayMerge(target: t, source: s))
        default:
            return source
        }
    }

    /// `deepArrayMerge`: for each source index, an object merges into (or replaces a non-object,
    /// `null` included, at) the same index of the target; anything else is appended. A target
    /// `null` is an element (`Any??` in the SDK). A source `null` is appended only past the end.
    static func deepArrayMerge(target: [JSONValue], source: [JSONValue]) -> [JSONValue] {
        var result = target
        for (i, value) in source.enumerated() {
            if i < target.count {
                switch (result[i], value) {
                case (.object, .object):
                    result[i] = deepMerge(target: result[i], source: value, arrays: .merge)
                    continue
                case (_, .object):
                    result[i] = value
                    continue
                default:
                    break
                }
            }
            if value == .null {
                if i > result.count - 1 { result.append(.null) }
            } else {
                result.append(value)
            }
        }
        return result
    }
}
