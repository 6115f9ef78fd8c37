import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One request to Cloak, as the client builds it.
public struct CloakHTTPRequest: Sendable, Equatable {
    public var method: String
    public var url: URL
    public var headers: [String: String]
    public var body: Data?

    public init(method: String, url: URL, headers: [String: String] = [:], body: Data? = nil) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }
}

/// How requests reach Cloak: ``URLSessionTransport`` by default; tests and apps (a pinned
/// session, a mock) provide their own. Answers every HTTP status as a ``CloakResponse``; throws
/// only when there is no answer.
public protocol CloakTransport: Sendable {
    func send(_ request: CloakHTTPRequest) async throws -> CloakResponse
}

/// `URLSession` with what a card form needs: an ephemeral configuration (no cache, no cookies,
/// no credential store), and no redirects followed (a redirect would send a card number's body
/// to wherever the answer points).
public final class URLSessionTransport: CloakTransport, @unchecked Sendable {
    /// Immutable after init; URLSession is thread-safe.
    private let session: URLSession

    /// - Parameter timeout: seconds a request may take, 30 by default.
    public init(timeout: TimeInterval = 30) {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        configuration.httpCookieStorage = nil
        configuration.urlCredentialStorage = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.timeoutIntervalForRequest = timeout
        session = URLSession(configuration: configuration, delegate: NoRedirects(), delegateQueue: nil)
    }

    deinit { session.finishTasksAndInvalidate() }

    public func send(_ request: CloakHTTPRequest) async throws -> CloakResponse {
        var urlRequest = URLRequest(url: request.url)
        urlRequest.httpMethod = request.method
        urlRequest.httpBody = request.body
        for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        let session = self.session
        return try await withCheckedThrowingContinuation { continuation in
            session.dataTask(with: urlRequest) { data, response, error in
                if let response = response as? HTTPURLResponse {
                    continuation.resume(returning: CloakResponse(status: response.statusCode, body: data ?? Data()))
                } else {
                    // The URL error's code says why (never a value: none is in the URL).
                    let reason = (error as? URLError).map { "URL error \($0.code.rawValue)" } ?? "no HTTP answer"
                    continuation.resume(
                        throwing: CloakCollectError(code: "no_answer", message: "Cloak did not answer (\(reason))"))
                }
            }.resume()
        }
    }

    /// Answers a redirect with the redirect itself: it is never followed.
    private final class NoRedirects: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
        func urlSession(
            _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
            newRequest request: URLRequest, completionHandler: @escaping (URLRequest?) -> Void
        ) {
            completionHandler(nil)
        }
    }
}
