import Foundation

/// A PostgreSQL store URL, parsed here so that libpq never sees its text:
/// `postgres://user:password@host:port,host2:port2/database?name=value&…` (or `postgresql://`),
/// IPv6 hosts in brackets (`[::1]:5432`), every part percent-decoded.
///
/// libpq is handed the parts as keywords (``keywords``): its own URL parser quotes a part it
/// cannot read, password and all, in its error message. Every error here names the part that is
/// wrong and repeats no text of the URL; ``description`` shows the password as `***`.
///
/// libpq's semantics are kept: the user name and password run to the first `@` before any `/`
/// (so a password may hold `?`, `#` and `:` as they are; `@` and `/` must be written `%40` and
/// `%2F`); a part left out (no host, no password, no database) is not passed at all, so libpq
/// takes its default (a Unix socket; `PGPASSWORD` or the password file; the user name).
package struct PostgresURL: Sendable, Equatable {
    /// One `host[:port]` of the (comma-separated) host list.
    package struct Host: Sendable, Equatable {
        /// A name, an IP address (IPv6 without its brackets) or a Unix socket directory; empty:
        /// libpq's default.
        package let name: String
        /// nil: libpq's default (5432).
        package let port: Int?

        package init(name: String, port: Int? = nil) {
            self.name = name
            self.port = port
        }
    }

    /// What is wrong with a URL, named without any of its text.
    package struct Error: Swift.Error, Sendable, Equatable, CustomStringConvertible {
        package let description: String
        init(_ description: String) { self.description = description }
    }

    /// The longest URL read (bytes): a store URL is a line of configuration, not a payload.
    package static let maximumLength = 4096

    /// The query parameters passed on to libpq (its connection keywords). Others are refused:
    /// `options` and `client_encoding` are Cloak's own, `service` would read settings from
    /// elsewhere, `sslpassword` is a secret this type does not keep out of messages.
    package static let acceptedParameters: Set<String> = [
        "host", "hostaddr", "port", "user", "password", "dbname", "passfile",
        "connect_timeout", "application_name", "fallback_application_name", "target_session_attrs",
        "load_balance_hosts",
        "keepalives", "keepalives_idle", "keepalives_interval", "keepalives_count", "tcp_user_timeout",
        "sslmode", "sslnegotiation", "sslcompression", "sslcert", "sslkey", "sslrootcert", "sslcrl", "sslcrldir",
        "sslsni",
        "ssl_min_protocol_version", "ssl_max_protocol_version", "requirepeer", "require_auth", "channel_binding",
        "gssencmode", "krbsrvname", "gsslib", "gssdelegation",
    ]

    /// `postgres` or `postgresql`.
    package let scheme: String
    package let user: String?
    /// nil when the URL has none (or an empty one): libpq then reads `PGPASSWORD` or the password file.
    package let password: String?
    /// The URL's host list; empty for `postgres:///db` (libpq's default host).
    package let hosts: [Host]
    package let database: String?
    /// The other query parameters, decoded (`user`, `password` and `dbname` given as parameters
    /// are moved to their properties).
    package let parameters: [String: String]

    /// Parses `text`; throws an error that names what is wrong and quotes none of `text`.
    package init(parsing text: String) throws(Error) {
        guard text.utf8.count <= Self.maximumLength else {
            throw Error("the store URL is longer than \(Self.maximumLength) bytes")
        }
        guard let schemeEnd = text.range(of: "://"),
            let scheme = ["postgres", "postgresql"].first(where: { text[..<schemeEnd.lowerBound] == $0 })
        else {
            throw Error("the store URL must start with postgres:// or postgresql://")
        }
        guard !text.utf8.contains(where: { $0 <= 0x20 || $0 == 0x7F }) else {
            throw Error("the store URL contains a space or a control character (percent-encode a space as %20)")
        }
        self.scheme = scheme
        var rest = text[schemeEnd.upperBound...]

        // User name and password: up to the first `@` before any `/`, as libpq reads them.
        var user: String?, password: String?
        if let at = rest.firstIndex(where: { $0 == "@" || $0 == "/" }), rest[at] == "@" {
            let userinfo = rest[..<at]
            rest = rest[rest.index(after: at)...]
            let colon = userinfo.firstIndex(of: ":")
            let rawUser = userinfo[..<(colon ?? userinfo.endIndex)]
            guard !rawUser.contains("?"), !rawUser.contains("#") else {
                throw Error(
                    "the store URL's user name contains '?' or '#': percent-encode them (%3F, %23), "
                        + "or write '/' before the parameters")
            }
            user = try Self.decode(rawUser, "user name")
            if let colon { password = try Self.decode(userinfo[userinfo.index(after: colon)...], "password") }
        }

        // Hosts: up to the database's `/` or the parameters' `?`.
        let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        rest = rest[authorityEnd...]
        guard !authority.contains("@") else {
            throw Error(
                "the store URL has more than one '@' before its database name: "
                    + "percent-encode '@' in the user name or password as %40")
        }
        var hosts: [Host] = []
        if !authority.isEmpty {
            for entry in authority.split(separator: ",", omittingEmptySubsequences: false) {
                hosts.append(try Self.host(entry))
            }
        }

        // The database: from `/` to `?`.
        var database: String?
        if rest.first == "/" {
            let end = rest.firstIndex(of: "?") ?? rest.endIndex
            let raw = rest[rest.index(after: rest.startIndex)..<end]
            rest = rest[end...]
            guard !raw.contains("/"), !raw.contains("@") else {
                throw Error(
                    "the store URL's database name contains '/' or '@': percent-encode them (%2F, %40); "
                        + "in a password too, '/' and '@' must be written %2F and %40")
            }
            database = try Self.decode(raw, "database name")
        }

        // Parameters: `name=value` pairs after `?`, joined by `&`.
        var parameters: [String: String] = [:]
        if rest.first == "?" {
            for pair in rest.dropFirst().split(separator: "&") {
                guard let equals = pair.firstIndex(of: "=") else {
                    throw Error("the store URL has a parameter without '=' (parameters are name=value, joined by &)")
                }
                let name = try Self.decode(pair[..<equals], "parameter name")
                guard Self.acceptedParameters.contains(name) else {
                    throw Error(
                        "the store URL has a parameter Cloak does not pass to libpq; accepted: "
                            + Self.acceptedParameters.sorted().joined(separator: ", "))
                }
                guard parameters[name] == nil else { throw Error("the store URL gives its parameter \(name) twice") }
                parameters[name] = try Self.decode(pair[pair.index(after: equals)...], "parameter \(name)")
            }
        }

        // The same setting in the URL and as a parameter: refused rather than one silently winning.
        func moved(_ name: String, _ value: String?, _ part: String) throws(Error) -> String? {
            guard let given = parameters.removeValue(forKey: name) else { return value }
            guard value == nil else {
                throw Error("the store URL gives its \(part) twice (before the host and as ?\(name)=)")
            }
            return given.isEmpty ? nil : given
        }
        self.user = try moved("user", user.flatMap { $0.isEmpty ? nil : $0 }, "user name")
        self.password = try moved("password", password.flatMap { $0.isEmpty ? nil : $0 }, "password")
        self.database = try moved("dbname", database.flatMap { $0.isEmpty ? nil : $0 }, "database name")
        if parameters["host"] != nil, hosts.contains(where: { !$0.name.isEmpty }) {
            throw Error("the store URL gives its host twice (after the '@' and as ?host=)")
        }
        if parameters["port"] != nil, hosts.contains(where: { $0.port != nil }) {
            throw Error("the store URL gives its port twice (after the host and as ?port=)")
        }
        self.hosts = hosts
        self.parameters = parameters.filter { !$0.value.isEmpty }
    }

    /// The connection keywords for `PQconnectdbParams`: only the parts the URL gives (an empty or
    /// missing part is left out, so libpq applies its default; a password never goes in empty).
    package var keywords: [String: String] {
        var out = parameters
        if hosts.contains(where: { !$0.name.isEmpty }) { out["host"] = hosts.map(\.name).joined(separator: ",") }
        if hosts.contains(where: { $0.port != nil }) {
            out["port"] = hosts.map { $0.port.map(String.init) ?? "" }.joined(separator: ",")
        }
        if let user { out["user"] = user }
        if let password { out["password"] = password }
        if let database { out["dbname"] = database }
        return out
    }

    // MARK: Parts

    /// One entry of the host list: `name`, `name:port`, `[v6]` or `[v6]:port`.
    private static func host(_ entry: Substring) throws(Error) -> Host {
        let raw: Substring, portText: Substring?
        if entry.first == "[" {
            guard let close = entry.firstIndex(of: "]") else {
                throw Error("the store URL's host is an unclosed IPv6 bracket")
            }
            raw = entry[entry.index(after: entry.startIndex)..<close]
            let after = entry[entry.index(after: close)...]
            guard !raw.isEmpty else { throw Error("the store URL's host is an empty IPv6 bracket") }
            guard
                raw.allSatisfy({ $0.isASCII && ($0.isHexDigit || $0.isLetter || $0.isNumber || ":.%_-".contains($0)) })
            else {
                throw Error("the store URL's IPv6 host has a character that is not allowed in an address")
            }
            if after.isEmpty {
                portText = nil
            } else if after.first == ":" {
                portText = after.dropFirst()
            } else {
                throw Error("the store URL's host has text after its IPv6 bracket (expected :port)")
            }
        } else {
            guard !entry.contains("["), !entry.contains("]") else {
                throw Error("the store URL's host has a stray bracket (an IPv6 host is written [::1] or [::1]:5432)")
            }
            let colons = entry.filter { $0 == ":" }.count
            guard colons <= 1 else {
                throw Error(
                    "the store URL's host has more than one ':' (an IPv6 host is written in brackets: [::1]:5432)")
            }
            let colon = entry.firstIndex(of: ":")
            raw = entry[..<(colon ?? entry.endIndex)]
            portText = colon.map { entry[entry.index(after: $0)...] }
            guard raw.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || ".-_~%".contains($0)) }) else {
                throw Error(
                    "the store URL's host has a character that is not allowed in a host name (percent-encode it)")
            }
        }
        let name = try decode(raw, "host")
        guard !name.contains(",") else {
            throw Error("the store URL's host holds an encoded ',' (%2C), which libpq would split on")
        }
        var port: Int?
        if let portText, !portText.isEmpty {
            guard portText.count <= 5, portText.allSatisfy({ $0.isASCII && $0.isNumber }), let n = Int(portText),
                (1...65535).contains(n)
            else {
                throw Error("the store URL's port is not a number from 1 to 65535")
            }
            port = n
        }
        return Host(name: name, port: port)
    }

    /// Percent-decodes one part (`+` stays a plus, as libpq reads it). A `%` not followed by two
    /// hexadecimal digits, `%00`, or bytes that are not UTF-8 once decoded are refused.
    static func decode(_ text: Substring, _ part: String) throws(Error) -> String {
        guard text.contains("%") else { return String(text) }
        let utf8 = Array(text.utf8)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count)
        var i = 0
        while i < utf8.count {
            guard utf8[i] == UInt8(ascii: "%") else {
                bytes.append(utf8[i])
                i += 1
                continue
            }
            guard i + 2 < utf8.count, let high = hexValue(utf8[i + 1]), let low = hexValue(utf8[i + 2]) else {
                throw Error(
                    "the store URL's \(part) has an invalid percent escape (a '%' must be followed by two "
                        + "hexadecimal digits; a literal '%' is written %25)")
            }
            let byte = high << 4 | low
            guard byte != 0 else { throw Error("the store URL's \(part) has a NUL byte (%00)") }
            bytes.append(byte)
            i += 3
        }
        guard let decoded = String(bytes: bytes, encoding: .utf8) else {
            throw Error("the store URL's \(part) is not UTF-8 once percent-decoded")
        }
        return decoded
    }

    private static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}

extension PostgresURL: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The URL as it may be shown: `postgres://user:***@host:5432/db?sslmode=require` (the
    /// password starred, parameters in name order, parts decoded).
    package var description: String {
        var text = scheme + "://"
        if user != nil || password != nil { text += (user ?? "") + (password == nil ? "" : ":***") + "@" }
        text += hosts.map { host in
            (host.name.contains(":") ? "[\(host.name)]" : host.name) + (host.port.map { ":\($0)" } ?? "")
        }.joined(separator: ",")
        if let database { text += "/" + database }
        if !parameters.isEmpty {
            text += "?" + parameters.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "&")
        }
        return text
    }

    package var debugDescription: String { "PostgresURL(\(description))" }

    /// `dump()` walks the mirror, not the description: it shows the redacted URL only.
    package var customMirror: Mirror { Mirror(self, children: ["url": description], displayStyle: .struct) }
}
