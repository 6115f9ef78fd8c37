import Testing

@testable import CloakHTTP

/// Request targets by form (RFC 9112 3.2) and Host values (RFC 9110 7.2), without sockets.
@Suite struct RequestTargetTests {
    @Test(
        arguments: [
            // method, target, raw path, path, query, host, port
            ("GET", "/", "/", "/", nil, nil, 0),
            ("GET", "/a%20b/c?x=1&y=%41", "/a%20b/c", "/a b/c", "x=1&y=%41", nil, 0),
            ("GET", "//egress/x", "//egress/x", "//egress/x", nil, nil, 0),
            ("GET", "/a%2Fb", "/a%2Fb", "/a/b", nil, nil, 0),
            ("GET", "/?", "/", "/", "", nil, 0),
            ("POST", "http://Example.com/p?q", "/p", "/p", "q", "example.com", 0),
            ("POST", "HTTPS://h:8443", "/", "/", nil, "h", 8443),
            ("GET", "http://[::1]:80/x", "/x", "/x", nil, "::1", 80),
            ("CONNECT", "api.example.com:443", "", "", nil, "api.example.com", 443),
            ("CONNECT", "[2001:db8::1]:8443", "", "", nil, "2001:db8::1", 8443),
            ("OPTIONS", "*", "*", "*", nil, nil, 0),
        ] as [(String, String, String, String, String?, String?, Int)])
    func formsAreRead(
        method: String, target: String, rawPath: String, path: String, query: String?, host: String?, port: Int
    ) throws {
        let read = try #require(RequestTarget.parse(target, method: method))
        #expect(read.rawPath == rawPath)
        #expect(read.path == path)
        #expect(read.query == query)
        #expect(read.host == host)
        #expect(read.port == port)
    }

    @Test(arguments: [
        ("GET", "a/b"), ("GET", "*"), ("POST", "/a%2"), ("POST", "/a%zz"), ("GET", "/a?b=%g0"), ("GET", "/a#b"),
        ("GET", "ftp://h/"), ("GET", "http:/h/"), ("GET", "http://"), ("GET", "http://u@h/"), ("GET", "http://h:x/"),
        ("CONNECT", "/"), ("CONNECT", "h"), ("CONNECT", "h:"), ("CONNECT", "h:0"), ("CONNECT", "h:65536"),
        ("CONNECT", "[::1"), ("CONNECT", "a b:1"), ("GET", "http://h:123456/"),
    ])
    func targetsOfNoFormAreRefused(method: String, target: String) {
        #expect(RequestTarget.parse(target, method: method) == nil, "\(method) \(target)")
    }

    @Test(arguments: [
        ("", true), ("example.com", true), ("example.com:8080", true), ("127.0.0.1", true), ("[::1]:443", true),
        ("a%20b", true), ("xn--bcher-kva.example", true), ("a b", false), ("a/b", false), ("a@b", false),
        ("h:123456", false), ("h:8x", false), ("[::1", false), ("[zz]", false), ("[::1]x", false), ("a%2", false),
        ("h\u{e9}", false),
    ])
    func hostValuesAreChecked(value: String, valid: Bool) {
        #expect(RequestTarget.isValidHost(value) == valid, "\(value.debugDescription)")
    }
}
