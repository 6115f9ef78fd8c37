import CloakCore

extension HTTPSyntax {
    /// Whether a request asks the server to close after answering it (RFC 9112, 9.3): a
    /// `Connection: close` option, or HTTP/1.0 without `keep-alive`. Options are comma-separated
    /// tokens in any case, over any number of `Connection` lines. No allocation beyond the
    /// options of `Connection` lines themselves.
    public static func asksToClose(_ headers: [(name: String, value: String)], isHTTP10: Bool) -> Bool {
        var keepAlive = false
        for header in headers where header.name.caseInsensitiveEquals("Connection") {
            for option in header.value.split(separator: ",") {
                let token = option.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }
                let text = String(token.reversed())
                if text.caseInsensitiveEquals("close") { return true }
                if text.caseInsensitiveEquals("keep-alive") { keepAlive = true }
            }
        }
        return isHTTP10 && !keepAlive
    }
}
