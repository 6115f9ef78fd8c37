import Glibc

/// Process-wide settings a server needs before its first socket.
enum ProcessLimits {
    /// Raises the soft descriptor limit to the hard one and returns it. The connection limit is
    /// then kept under it, so the server never reaches EMFILE through client connections alone.
    static func raiseDescriptorLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        return limit.rlim_cur > rlim_t(Int32.max) ? Int(Int32.max) : Int(limit.rlim_cur)
    }

    /// The most connections `descriptors` allow, leaving room for listeners, upstream
    /// connections, the store and logs (an eighth, at least 32).
    static func connectionCeiling(descriptors: Int) -> Int {
        max(1, descriptors - max(32, descriptors / 8))
    }

    /// A write to a peer that reset must fail with EPIPE, not kill the process.
    static func ignoreBrokenPipes() {
        signal(SIGPIPE, SIG_IGN)
    }
}
