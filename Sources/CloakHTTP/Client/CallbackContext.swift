import Foundation

/// The one place where Swift objects are handed to C callbacks as `void *` contexts.
///
/// - ``retained(_:)`` keeps the object alive until the callback ``release(_:)``s it: for
///   one-shot callbacks that may fire after every Swift reference is gone (a DNS answer, a
///   deferred free).
/// - ``unretained(_:)`` / ``object(_:)`` for callbacks whose owner outlives them (it unregisters
///   them before it goes).
enum CallbackContext {
    static func retained<T: AnyObject>(_ object: T) -> UnsafeMutableRawPointer {
        Unmanaged.passRetained(object).toOpaque()
    }

    /// The object of a ``retained(_:)`` context, giving back the retain (call once).
    static func release<T: AnyObject>(_ context: UnsafeMutableRawPointer) -> T {
        Unmanaged<T>.fromOpaque(context).takeRetainedValue()
    }

    static func unretained<T: AnyObject>(_ object: T) -> UnsafeMutableRawPointer {
        Unmanaged.passUnretained(object).toOpaque()
    }

    static func object<T: AnyObject>(_ context: UnsafeMutableRawPointer) -> T {
        Unmanaged<T>.fromOpaque(context).takeUnretainedValue()
    }
}
