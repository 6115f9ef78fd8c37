import CloakCore

/// A query string read strictly, as the admin endpoints take theirs: only `known` names, each at
/// most once, each with a percent-decoded value of 1 to 256 bytes. Anything else is a 400 that
/// names the parameter (scrubbed), never its value.
enum StrictQuery {
    static func pairs(_ query: String?, known: Set<String>) throws(CloakError) -> [(name: String, value: String)] {
        var seen = Set<String>()
        var out: [(name: String, value: String)] = []
        for pair in (query ?? "").split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = String(parts[0])
            guard known.contains(name) else {
                throw .malformed(
                    "unknown parameter \"\(Redaction.scrub(name, limit: 32))\" (known: \(known.sorted().joined(separator: ", ")))"
                )
            }
            guard seen.insert(name).inserted else { throw .malformed("\(name) is given twice") }
            guard parts.count == 2, let value = VaultAPIHandler.decodeQueryComponent(parts[1]), !value.isEmpty,
                value.utf8.count <= 256
            else { throw .malformed("\(name) needs a value of 1 to 256 bytes") }
            out.append((name, value))
        }
        return out
    }
}
