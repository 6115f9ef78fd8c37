import Glibc

/// The calling thread's scheduling priority, lowered for good (issue 60: the import runner's
/// own thread), so that on a busy node the loops, which answer requests, take the cores first.
/// Linux keeps a nice value a thread: `setpriority(PRIO_PROCESS, 0, …)` changes the calling
/// thread's alone. Never raised again: an unprivileged process may lower a thread's priority
/// but not restore it (RLIMIT_NICE), so only a thread that does nothing else is lowered.
package enum ThreadNiceness {
    /// The nice value of work that may wait (0 is every other thread's).
    package static let background: Int32 = 10

    package static func lower() {
        _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, background)
    }
}
