/// What a route's request steps wrote over the data they were given, revealed values among it
/// (issue 49; review V, item 9), looked for in the upstream's answer by ``RevealedValues``: an
/// answer that echoes it hands revealed values back readably, or lets them be tested offline
/// against guesses.
struct StepWrites: Sendable {
    /// Looked for whole: a JWS's payload (the body, base64url), a header a step set over the
    /// body, each form of a computed value (``RevealedValues/encodings(of:)``).
    var exact: [[UInt8]] = []
    /// Values computed from the data (a digest, a signature, a MAC): any run of
    /// ``EncodedRuns/minimumRun`` characters of one of their text forms is looked for too.
    var computed: [[UInt8]] = []

    var isEmpty: Bool { exact.isEmpty && computed.isEmpty }
}
