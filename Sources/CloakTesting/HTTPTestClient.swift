/// The requests both test clients send: ``RawHTTPClient`` over a socket to a ``TestServer``, and
/// ``InProcessClient`` straight to a ``TestService``. Helpers shared by tests on either take one.
///
/// The requirements have no default arguments: pass `body:` (or `json:`) and `headers:` in full.
package protocol HTTPTestClient {
    func request(_ method: String, _ path: String, body: [UInt8]?, headers: [(String, String)]) throws
        -> RawHTTPClient.Response

    func request(_ method: String, _ path: String, json: String, headers: [(String, String)]) throws
        -> RawHTTPClient.Response
}

extension RawHTTPClient: HTTPTestClient {}

extension InProcessClient: HTTPTestClient {}
