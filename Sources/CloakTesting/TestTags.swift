import Testing

/// What a test needs or is for (issue 75), as Swift Testing tags. A suite says it once,
/// `@Suite(.tags(.racy))` (or on the one `@Test` that alone needs it); `scripts/tagged TAG` turns a
/// tag into the `--filter` that runs its suites and tests, so no script keeps a list of names.
extension Tag {
    /// Meant to run with both cores busy (`.ci/run`'s stress pass: stress-ng and the fuzzers as
    /// the load; README "Tests"): races, deadlines and pooled connections, where timing hides a
    /// defect.
    @Tag package static var racy: Self
    /// Needs the PostgreSQL cluster `scripts/test` starts (`CLOAK_TEST_POSTGRES_URL`); skipped
    /// with its reason without it.
    @Tag package static var postgres: Self
    /// Needs the pinned Python tools (`CLOAK_TEST_PYTHON`, `scripts/test-python`); skipped with
    /// its reason without them.
    @Tag package static var python: Self
    /// Starts the `cloak` executable (`CloakNode`, a command).
    @Tag package static var processes: Self
    /// Opens loopback sockets: a live server and a raw client.
    @Tag package static var sockets: Self
    /// The server's side of what a browser drives (Cloak Elements' files, schemas and reveal
    /// sessions; the console's pages, cookies and CSRF), whose browser side
    /// `scripts/browser-tests` runs in headless Chromium: after a change to one, run both.
    @Tag package static var browser: Self
}
