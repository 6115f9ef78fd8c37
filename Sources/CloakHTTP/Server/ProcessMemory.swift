import CLibevent

/// The process's heap, for a service that builds something large and short-lived (a BIN table
/// read from the store): what the build freed goes back to the system, so the process's resident
/// size falls back to what it holds, not its peak.
public enum ProcessMemory {
    public static func releaseFreed() { _ = CLibevent_release_free_memory() }
}
