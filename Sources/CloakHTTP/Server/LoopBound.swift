import Glibc
import Synchronization

/// The thread an event loop runs on, while it runs: what ``LoopBound`` values check.
///
/// Before the loop starts its owner sets it up on the thread that made it, and after the loop
/// stopped tears it down on the thread that joins it; only in between is every access confined
/// to the loop's thread.
final class LoopThread: Sendable {
    /// `pthread_self()` of the loop thread while it runs, else 0.
    private let thread = Atomic<UInt>(0)

    init() {}

    /// A thread no loop ever runs on: state bound to it is never checked. For state made
    /// outside a server (in-process callers), used by one caller at a time.
    static let unconfined = LoopThread()

    /// The calling thread runs the loop from now on.
    func enter() {
        thread.store(pthread_self(), ordering: .releasing)
        EventLoopThread.mark(true)
    }

    /// The loop stopped.
    func leave() {
        thread.store(0, ordering: .releasing)
        EventLoopThread.mark(false)
    }

    /// Whether the caller is the loop's thread (false while the loop is not running).
    var isCurrent: Bool {
        let running = thread.load(ordering: .acquiring)
        return running != 0 && running == pthread_self()  // pthread_t is the thread's address on Linux
    }

    /// Traps when the loop runs and the caller is another thread.
    @inline(__always)
    func check() {
        let running = thread.load(ordering: .relaxed)
        precondition(
            running == 0 || pthread_equal(running, pthread_self()) != 0, "loop-bound state touched off its loop thread")
    }
}

/// State confined to one event loop's thread, with the thread checked on every access (as
/// swift-nio's `NIOLoopBound`): libevent and the state around it are not thread-safe, and an
/// access from another thread would corrupt them silently; here it traps.
///
/// Stored inline (no allocation); its owner is a class shared with the loop thread, which is
/// why it is `@unchecked Sendable`: the check is the guarantee. Code above the server binds a
/// request's state to the request's loop with ``init(_:on:)``.
@dynamicMemberLookup
public struct LoopBound<Value>: @unchecked Sendable {
    let loop: LoopThread
    private var storage: Value
    #if DEBUG
        /// Set during ``withValue(_:)``: its owners turn off dynamic exclusivity checks for speed
        /// (`@exclusivity(unchecked)`), so a nested access from inside `body` (a callback, a log
        /// line reading the state) would go unnoticed; debug builds, the tests', trap on it.
        private var accessing = false
    #endif

    init(_ value: Value, loop: LoopThread) {
        self.loop = loop
        self.storage = value
    }

    /// `value` bound to `loop`'s thread; with no loop (a request handled in process, outside a
    /// server) it is not checked, and its one caller at a time is the caller's promise.
    public init(_ value: Value, on loop: LoopHandle?) {
        self.init(value, loop: loop?.thread ?? .unconfined)
    }

    /// The value in place, for `body` to read or change: checked once, with no coroutine (a
    /// `value` access the compiler does not inline allocates its coroutine frame, and a
    /// non-mutating method on state stored in a class copies the whole value first). For state
    /// read on every request.
    @inline(__always)
    public mutating func withValue<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        loop.check()
        #if DEBUG
            precondition(!accessing, "loop-bound state accessed from inside its own withValue")
            accessing = true
            defer { accessing = false }
        #endif
        return try body(&storage)
    }

    /// One field of the value, checked like ``value``: owners write `state.mode` instead of
    /// forwarding each field through an accessor of their own.
    public subscript<Field>(dynamicMember field: WritableKeyPath<Value, Field>) -> Field {
        _read {
            loop.check()
            #if DEBUG
                precondition(!accessing, "loop-bound state accessed from inside its own withValue")
            #endif
            yield storage[keyPath: field]
        }
        _modify {
            loop.check()
            #if DEBUG
                precondition(!accessing, "loop-bound state accessed from inside its own withValue")
            #endif
            yield &storage[keyPath: field]
        }
    }

    public var value: Value {
        _read {
            loop.check()
            #if DEBUG
                precondition(!accessing, "loop-bound state accessed from inside its own withValue")
            #endif
            yield storage
        }
        _modify {
            loop.check()
            #if DEBUG
                precondition(!accessing, "loop-bound state accessed from inside its own withValue")
            #endif
            yield &storage
        }
    }
}

/// Whether the calling thread runs an event loop (from ``LoopThread/enter()`` to
/// ``LoopThread/leave()``): a thread that must never block, since every connection and timer of
/// its loop would wait with it. What a blocking wait asserts it is not on.
public enum EventLoopThread {
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        precondition(pthread_key_create(&key, nil) == 0, "pthread_key_create failed")
        return key
    }()

    static func mark(_ running: Bool) {
        pthread_setspecific(key, running ? UnsafeRawPointer(bitPattern: 1) : nil)
    }

    /// Whether the caller is a running loop's thread.
    public static var isCurrent: Bool { pthread_getspecific(key) != nil }
}
