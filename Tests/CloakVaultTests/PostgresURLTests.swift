import Foundation
import Testing

@testable import CloakVault

/// PostgreSQL store URLs, read by Cloak before libpq sees anything (no server needed): good URLs
/// become libpq keywords; bad ones are refused with a message that quotes no part of the URL.
@Suite struct PostgresURLTests {
    /// The parser's message for `url`, which must refuse it.
    func refusal(_ url: String) throws -> String {
        let error = try #require(throws: PostgresURL.Error.self) { _ = try PostgresURL(parsing: url) }
        return error.description
    }

    // MARK: Good URLs

    @Test(
        arguments: [
            (
                "postgres://cloak:s3cret@db.example:5432/cloak?sslmode=verify-full",
                [
                    "host": "db.example", "port": "5432", "user": "cloak", "password": "s3cret", "dbname": "cloak",
                    "sslmode": "verify-full",
                ]
            ),
            ("postgresql://cloak@localhost/cloak", ["host": "localhost", "user": "cloak", "dbname": "cloak"]),
            (
                "postgres://cloak:pw@127.0.0.1:20001/cloak",
                ["host": "127.0.0.1", "port": "20001", "user": "cloak", "password": "pw", "dbname": "cloak"]
            ),
            (
                "postgres://h1,h2/db?target_session_attrs=read-write",
                ["host": "h1,h2", "dbname": "db", "target_session_attrs": "read-write"]
            ),
            ("postgres://h1:5432,h2:5433/db", ["host": "h1,h2", "port": "5432,5433", "dbname": "db"]),
            ("postgres://h1:5432,h2/db", ["host": "h1,h2", "port": "5432,", "dbname": "db"]),
            (
                "postgres://h/db?connect_timeout=3&application_name=cloak-a&sslmode=require",
                [
                    "host": "h", "dbname": "db", "connect_timeout": "3", "application_name": "cloak-a",
                    "sslmode": "require",
                ]
            ),
            ("postgres:///cloak?host=%2Fvar%2Frun%2Fpostgresql", ["host": "/var/run/postgresql", "dbname": "cloak"]),
            ("postgres://%2Ftmp%2Fsock/db", ["host": "/tmp/sock", "dbname": "db"]),
            ("postgres://u@h/db?password=p%26w", ["host": "h", "user": "u", "password": "p&w", "dbname": "db"]),
            ("postgres://u@h?dbname=other&port=6000", ["host": "h", "user": "u", "dbname": "other", "port": "6000"]),
            ("postgres://h/db?sslmode=", ["host": "h", "dbname": "db"]),
            ("postgres://h/db?", ["host": "h", "dbname": "db"]),
            ("postgres://h:/db", ["host": "h", "dbname": "db"]),
            ("postgres://", [:]),
        ] as [(String, [String: String])])
    func goodURLsBecomeKeywords(url: String, keywords: [String: String]) throws {
        #expect(try PostgresURL(parsing: url).keywords == keywords)
    }

    @Test func thePartsAreKept() throws {
        let url = try PostgresURL(parsing: "postgresql://cloak:s3cret@db.example:6543/vault?sslmode=verify-full")
        #expect(url.scheme == "postgresql")
        #expect(url.user == "cloak")
        #expect(url.password == "s3cret")
        #expect(url.hosts == [PostgresURL.Host(name: "db.example", port: 6543)])
        #expect(url.database == "vault")
        #expect(url.parameters == ["sslmode": "verify-full"])
    }

    /// libpq's defaults apply to what the URL leaves out: no host keyword (a Unix socket), no port,
    /// no database (the user's name), and never an empty password (libpq then reads `PGPASSWORD`
    /// or the password file; an empty one would be sent as it is).
    @Test(arguments: [
        "postgres:///cloak", "postgres://u@/cloak", "postgres://u:@/cloak", "postgresql:///cloak?sslmode=",
    ])
    func anEmptyHostOrPasswordIsLeftOut(url: String) throws {
        let parsed = try PostgresURL(parsing: url)
        #expect(parsed.hosts.isEmpty)
        #expect(parsed.password == nil)
        let keywords = parsed.keywords
        #expect(keywords["host"] == nil && keywords["port"] == nil && keywords["password"] == nil, "\(keywords)")
        #expect(keywords["dbname"] == "cloak")
    }

    @Test func aPortWithoutAHostKeepsTheDefaultHost() throws {
        let keywords = try PostgresURL(parsing: "postgres://:5433/db").keywords
        #expect(keywords == ["port": "5433", "dbname": "db"])
    }

    @Test(
        arguments: [
            ("postgres://u:pw@[::1]:6543/db", "::1", 6543),
            ("postgres://[::1]/db", "::1", nil),
            ("postgres://[2001:db8::5]:5432", "2001:db8::5", 5432),
            ("postgres://[fe80::1%25eth0]/db", "fe80::1%eth0", nil),
            ("postgres://[::ffff:192.0.2.1]?sslmode=disable", "::ffff:192.0.2.1", nil),
        ] as [(String, String, Int?)])
    func ipv6HostsAreWrittenInBrackets(url: String, host: String, port: Int?) throws {
        let parsed = try PostgresURL(parsing: url)
        #expect(parsed.hosts == [PostgresURL.Host(name: host, port: port)])
        #expect(parsed.keywords["host"] == host)
        #expect(parsed.description.contains("[\(host)]"), "\(parsed)")
    }

    @Test func ipv6AndNamedHostsMix() throws {
        let keywords = try PostgresURL(parsing: "postgres://[::1]:5432,db.example:5433/db").keywords
        #expect(keywords["host"] == "::1,db.example")
        #expect(keywords["port"] == "5432,5433")
    }

    /// `@`, `/` (and `%`) must be percent-encoded in a password; `:`, `?` and `#` may be written as
    /// they are (libpq reads the password up to the first `@` before any `/`).
    @Test(arguments: [
        ("postgres://u:p%40ss%3Aw%2Fo%3Frd%23@h/db", "p@ss:w/o?rd#"),
        ("postgres://u:pa?s#s:x@h/db", "pa?s#s:x"),
        ("postgres://u:%40%40@h", "@@"),
        ("postgres://u:100%25+sure@h/db", "100%+sure"),
        ("postgres://u:p%C3%A4ss@h/db", "päss"),
        ("postgres://u:p%c3%a4ss@h/db", "päss"),
        ("postgres://u:pw@h?sslmode=require", "pw"),
    ])
    func passwordsArePercentDecoded(url: String, password: String) throws {
        let parsed = try PostgresURL(parsing: url)
        #expect(parsed.password == password)
        #expect(parsed.keywords["password"] == password)
        #expect(parsed.user == "u")
        #expect(parsed.hosts.map(\.name) == ["h"])
    }

    @Test func userNamesAndDatabasesArePercentDecodedToo() throws {
        let parsed = try PostgresURL(parsing: "postgres://us%40er@h/my%20db?application_name=a%26b")
        #expect(parsed.user == "us@er")
        #expect(parsed.database == "my db")
        #expect(parsed.parameters["application_name"] == "a&b")
    }

    // MARK: Hostile and broken URLs

    /// The two URLs of the review: libpq quoted the first one's password in its percent-decoding
    /// error, and the whole second URL in its bracket error.
    @Test func theReviewsURLsAreRefusedWithoutThePassword() throws {
        let escape = try refusal("postgres://cloak:Sup3rS%ZZecret@host/db")
        #expect(escape.contains("password has an invalid percent escape"), "\(escape)")
        let bracket = try refusal("postgres://cloak:Sup3rSecret@[::1/db")
        #expect(bracket.contains("unclosed IPv6 bracket"), "\(bracket)")
        for message in [escape, bracket] {
            #expect(
                !message.contains("Sup3r") && !message.contains("ecret") && !message.contains("cloak:"), "\(message)")
        }
    }

    /// Whatever is wrong, the message names the part and quotes none of the URL.
    @Test(arguments: [
        ("postgres://cloak:Sup3rS%ZZecret@host/db", "password"),
        ("postgres://cloak:Sup3rSecret%@host/db", "password"),
        ("postgres://cloak:Sup3rSecret%4@host/db", "password"),
        ("postgres://cloak:Sup3rSecret%00@host/db", "NUL"),
        ("postgres://cloak:Sup3rSecret%FF@host/db", "UTF-8"),
        ("postgres://cloak:Sup3rSecret@[::1/db", "unclosed IPv6 bracket"),
        ("postgres://cloak:Sup3rSecret@[]/db", "empty IPv6 bracket"),
        ("postgres://cloak:Sup3rSecret@[::1]x/db", "after its IPv6 bracket"),
        ("postgres://cloak:Sup3rSecret@[::1;Sup3r]/db", "IPv6 host"),
        ("postgres://cloak:Sup3rSecret@::1/db", "more than one ':'"),
        ("postgres://cloak:Sup3rSecret@h]/db", "stray bracket"),
        ("postgres://cloak:Sup3r@Secret@host/db", "more than one '@'"),
        ("postgres://cloak:Sup3r/Secret@host/db", "port"),
        ("postgres://cloak:Sup3rSecret@host:Sup3r/db", "port"),
        ("postgres://cloak:Sup3rSecret@host:0/db", "port"),
        ("postgres://cloak:Sup3rSecret@host:65536/db", "port"),
        ("postgres://cloak:5432/Sup3r@Secret@host/db", "database name"),
        ("postgres://cloak:Sup3rSecret@ho!st/db", "host"),
        ("postgres://cloak:Sup3rSecret@h%2Cx/db", "','"),
        ("postgres://cloak:Sup3rSecret@ho st/db", "space"),
        ("postgres://cloak:Sup3rSecret@host/db\n", "control character"),
        ("postgres://cloak:Sup3rSecret@host/db%ZZ", "database name"),
        ("postgres://cloak:Sup3rSecret@host/db?Sup3rSecret", "without '='"),
        ("postgres://cloak:Sup3rSecret@host/db?Sup3rSecret=1", "does not pass"),
        ("postgres://cloak:Sup3rSecret@host/db?sslmode=Sup3r%ZZ", "parameter sslmode"),
        ("postgres://cloak:Sup3rSecret@host/db?sslmode=require&sslmode=disable", "twice"),
        ("postgres://cloak:Sup3rSecret@host/db?password=Sup3rOther", "password twice"),
        ("postgres://cloak:Sup3rSecret@host/db?user=Sup3rOther", "user name twice"),
        ("postgres://cloak:Sup3rSecret@host/db?host=Sup3rOther", "host twice"),
        ("postgres://cloak:Sup3rSecret@host:5432/db?port=5433", "port twice"),
        ("postgres://cloak:Sup3rSecret@host/db?sslpassword=Sup3rSecret", "does not pass"),
        ("postgres://cloak:Sup3rSecret@host/db?options=-c%20Sup3r", "does not pass"),
        ("postgres://h?application_name=Sup3r@Secret", "user name"),
        ("postgress://cloak:Sup3rSecret@host/db", "must start with"),
        ("cloak:Sup3rSecret@host/db", "must start with"),
        ("POSTGRES://cloak:Sup3rSecret@host/db", "must start with"),
    ])
    func brokenURLsAreRefusedWithoutQuotingThem(url: String, named: String) throws {
        let message = try refusal(url)
        #expect(message.contains(named), "\(message)")
        #expect(!message.contains("Sup3r") && !message.contains("ecret"), "the message quotes the URL: \(message)")
        #expect(message.hasPrefix("the store URL"), "\(message)")
    }

    @Test func unknownParametersAreRefusedAndTheAcceptedOnesListed() throws {
        let message = try refusal("postgres://h/db?sslmdoe=require")
        #expect(
            message.contains("sslmode") && message.contains("connect_timeout") && message.contains("application_name"))
        #expect(!message.contains("sslmdoe"), "an unknown name may be a pasted secret: \(message)")
        for name in ["options", "client_encoding", "service", "sslpassword", "replication"] {
            #expect(throws: PostgresURL.Error.self, "\(name)") { try PostgresURL(parsing: "postgres://h/db?\(name)=x") }
        }
        for name in PostgresURL.acceptedParameters.sorted()
        where !["host", "port", "user", "password", "dbname"].contains(name) {
            #expect(try PostgresURL(parsing: "postgres://h/db?\(name)=x").keywords[name] == "x", "\(name)")
        }
    }

    @Test func anOversizedURLIsRefused() throws {
        let head = "postgres://cloak:", tail = "@h/db"
        let fits =
            head + String(repeating: "a", count: PostgresURL.maximumLength - head.utf8.count - tail.utf8.count) + tail
        #expect(fits.utf8.count == 4096)
        #expect(try PostgresURL(parsing: fits).password?.count == 4096 - head.count - tail.count)
        let long = head + String(repeating: "S", count: 5000) + tail
        let message = try refusal(long)
        #expect(message.contains("longer than 4096 bytes"), "\(message)")
        #expect(!message.contains("SSSS"))
    }

    // MARK: Shown, never the password

    @Test func theDescriptionStarsThePassword() throws {
        let url = try PostgresURL(
            parsing: "postgres://cloak:Sup3r%40Secret@[::1]:5432,db:5433/cloak?sslmode=require&application_name=a")
        #expect(url.description == "postgres://cloak:***@[::1]:5432,db:5433/cloak?application_name=a&sslmode=require")
        var dumped = ""
        dump(url, to: &dumped)
        for text in ["\(url)", String(describing: url), String(reflecting: url), dumped, "\(url.hosts)"] {
            #expect(!text.contains("Sup3r") && !text.contains("ecret"), "\(text)")
        }
        #expect(try PostgresURL(parsing: "postgres://h/db?password=Sup3rSecret").description == "postgres://:***@h/db")
        #expect(try PostgresURL(parsing: "postgres://cloak@h").description == "postgres://cloak@h")
    }

    /// libpq does not quote the password in its messages; should one ever, it is starred.
    @Test func libpqMessagesAreScrubbedOfThePassword() {
        let hidden = PostgreSQLConnection.scrubbed("password \"Sup3rSecret\" rejected", ["Sup3rSecret"])
        #expect(!hidden.contains("Sup3rSecret") && hidden.contains("not shown"))
        // A one-letter password: masking in place would show where its letters stood.
        let short = PostgreSQLConnection.scrubbed("password authentication failed", ["a"])
        #expect(!short.contains("***") && short.contains("not shown"))
        #expect(PostgreSQLConnection.scrubbed("nothing to hide", ["Sup3rSecret"]) == "nothing to hide")
        #expect(PostgreSQLConnection.scrubbed("a b", []) == "a b")
    }

    /// The store refuses such a URL before libpq is called (so no server is needed), and its
    /// error quotes none of it.
    @Test(arguments: ["postgres://cloak:Sup3rS%ZZecret@host/db", "postgres://cloak:Sup3rSecret@[::1/db"])
    func theStoreRefusesAHostileURLBeforeLibpqSeesIt(url: String) throws {
        let error = try #require(throws: StoreError.self) { _ = try PostgreSQLAliasStore(url: url) }
        #expect(!error.description.contains("Sup3r") && !error.description.contains("ecret"), "\(error)")
        #expect(error.description.contains("the store URL"), "\(error)")
    }
}
