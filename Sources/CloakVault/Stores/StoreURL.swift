import Foundation

/// A `vault.store` value: the store it names (`sqlite:PATH` or `postgres://…`), and the URL as
/// it may be shown (`postgres://user:***@host/db`).
///
/// A PostgreSQL URL is parsed here (``PostgresURL``) before libpq sees anything; a URL that does
/// not parse, or names no store, is refused with a message that quotes none of it (it may hold a
/// password).
package enum StoreURL {
    package struct Unknown: Error, CustomStringConvertible {
        package let description = "the store URL must be sqlite:PATH, postgres://… or postgresql://…"
    }

    /// Opens the store `url` names.
    package static func open(_ url: String) throws -> any AliasStore {
        if url.hasPrefix("sqlite:") {
            return try SQLiteAliasStore(path: String(url.dropFirst("sqlite:".count)))
        }
        if url.hasPrefix("postgres://") || url.hasPrefix("postgresql://") {
            return try PostgreSQLAliasStore(url: PostgresURL(parsing: url))
        }
        throw Unknown()
    }

    /// The URL without its password (userinfo after the first `:`); `password=` parameters too.
    ///
    /// The userinfo is looked for up to the first `/` only, as libpq does: libpq takes
    /// `postgres://u:pa?ss@h/db` as user `u`, password `pa?ss`, so a `?` or `#` cannot end it.
    /// With more than one `@`, everything up to the last is hidden (more than the password,
    /// never less).
    package static func redacted(_ url: String) -> String {
        var text = url
        if let scheme = text.range(of: "://") {
            let rest = text[scheme.upperBound...]
            let authorityEnd = rest.firstIndex(of: "/") ?? rest.endIndex
            if let at = rest[..<authorityEnd].lastIndex(of: "@"), let colon = rest[..<at].firstIndex(of: ":") {
                text.replaceSubrange(text.index(after: colon)..<at, with: "***")
            }
        }
        return text.replacingOccurrences(of: #"password=[^&\s]*"#, with: "password=***", options: .regularExpression)
    }
}

extension PostgreSQLConnection.Row: RecordRow {
    func text(at column: Int) -> String? { text(column) }
    func bytes(at column: Int) -> [UInt8]? { bytes(column) }
    func integer(at column: Int) -> Int64? { int(column) }
}
