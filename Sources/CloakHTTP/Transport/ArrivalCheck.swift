/// Whether an upstream's bytes arrived before the request they would answer was sent (issue 55,
/// item 10; issue 44, defect 0). The pool looks for waiting bytes right before a request's first
/// write, but bytes can still arrive between that look and the write (a thread descheduled
/// between two system calls): read after the request, they would be taken for its answer.
///
/// The kernel stamps every segment an upstream socket receives (`SO_TIMESTAMPNS`). The moment
/// before each write is kept; once everything is written, the first read looks at when the first
/// waiting byte arrived: before the last write began, it cannot be that write's answer.
///
/// Not exact: Linux merges a segment that arrives while the one before it is still unread into
/// that one, and gives the merged one the later stamp. Bytes that arrived before the write and
/// were still unread when the answer came then look as new as the answer. The first read after
/// the write usually comes before the answer (a round trip), so that takes a loop held up for
/// that long; `docs/threat-model.md` has the rate measured.
struct ArrivalCheck {
    /// When the last write began (``Sockets/now()``'s clock, nanoseconds).
    private var lastWrite: Int64 = 0
    /// Everything written: the next read is checked.
    private var armed = false
    /// The connection carries a second request or later (``watch()``): only then can bytes
    /// that arrived before a write be another exchange's, and only then is the peek made.
    private var watching = false

    /// The connection is being reused: from now on, every read after a write is checked.
    mutating func watch() { watching = true }

    /// A write is about to go into the socket.
    mutating func writing() {
        guard watching else { return }  // a connection's first request (and every server's) pays nothing
        lastWrite = Sockets.now()
        armed = false
    }

    /// Everything written so far has gone into the socket.
    mutating func written() { armed = watching }

    /// At a read event, once per ``written()``: whether the first byte waiting in `fd` arrived
    /// before the last write began. Nothing is consumed.
    mutating func arrivedBeforeTheLastWrite(_ fd: Int32) -> Bool {
        guard armed else { return false }
        armed = false
        guard let arrival = Sockets.firstArrival(fd) else { return false }
        return arrival < lastWrite
    }
}
