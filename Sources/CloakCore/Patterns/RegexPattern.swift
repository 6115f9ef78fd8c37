import Foundation

/// A regular expression from the configuration, compiled once, matched with the SDK's semantics.
///
/// The SDK matches with `NSPredicate(format: "SELF MATCHES %@")`: ICU syntax and an implicit
/// whole-string match. This type keeps both. For the SDK's default patterns it carries a native
/// matcher (``NativePattern``) that decides ASCII input without ICU, about 20× faster; input the
/// native matcher cannot decide goes to ICU, so results never differ (a test compares the two).
public final class RegexPattern: Sendable, Equatable, CustomStringConvertible {
    public let source: String
    // NSRegularExpression is immutable once built and documented thread-safe for matching.
    private let regex: NSRegularExpression
    /// The same pattern wrapped as `(?:source)\z` and matched anchored: ICU `matches()` semantics.
    private let whole: NSRegularExpression
    private let native: NativePattern?
    private let nativeClass: NativeCharacterClass?

    /// Compiles `source`.
    /// - Throws: ``RegexPattern/CompileError`` naming the pattern (configuration text, not user data).
    public init(_ source: String) throws(CompileError) {
        self.source = source
        do {
            self.regex = try NSRegularExpression(pattern: source, options: [])
            self.whole = try NSRegularExpression(pattern: "(?:\(source))\\z", options: [])
        } catch {
            throw CompileError(pattern: source)
        }
        self.native = NativePattern(source: source)
        self.nativeClass = NativeCharacterClass(source: source)
    }

    public struct CompileError: Error, Sendable, CustomStringConvertible {
        public let pattern: String
        public var description: String { "invalid regular expression \"\(pattern)\"" }
    }

    public static func == (lhs: RegexPattern, rhs: RegexPattern) -> Bool { lhs.source == rhs.source }
    public var description: String { source }

    /// True when the whole of `input` matches (NSPredicate `MATCHES`).
    public func wholeMatch(_ input: String) -> Bool {
        if let native, let decided = native.wholeMatch(input) { return decided }
        return icuWholeMatch(input)
    }

    /// The ICU answer alone, bypassing any native matcher (tests compare the two).
    public func icuWholeMatch(_ input: String) -> Bool {
        let range = NSRange(input.startIndex..<input.endIndex, in: input)
        return whole.firstMatch(in: input, options: [.anchored], range: range) != nil
    }

    /// True when any part of `input` matches (`NSRegularExpression.firstMatch`, Basis Theory validation).
    public func containsMatch(_ input: String) -> Bool {
        let range = NSRange(input.startIndex..<input.endIndex, in: input)
        return regex.firstMatch(in: input, options: [], range: range) != nil
    }

    /// Replaces every match with `template` (Basis Theory transform).
    public func replacingMatches(in input: String, with template: String) -> String {
        if let nativeClass, let replaced = nativeClass.replacingMatches(in: input, with: template) { return replaced }
        return icuReplacingMatches(in: input, with: template)
    }

    /// The ICU answer alone (tests compare it with the native one).
    public func icuReplacingMatches(in input: String, with template: String) -> String {
        let range = NSRange(input.startIndex..<input.endIndex, in: input)
        return regex.stringByReplacingMatches(in: input, options: [], range: range, withTemplate: template)
    }
}
