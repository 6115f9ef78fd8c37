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

/// How much of a request's body has gone out: what ``CloakCollect/submit(_:extraData:mappingPolicy:progress:)``
/// reports while a form (its files) is uploaded.
public struct CloakUploadProgress: Sendable, Equatable {
    public let bytesSent: Int64
    public let totalBytes: Int64

    public init(bytesSent: Int64, totalBytes: Int64) {
        self.bytesSent = bytesSent
        self.totalBytes = totalBytes
    }

    /// From 0 to 1 (1 for an empty body).
    public var fractionCompleted: Double {
        totalBytes > 0 ? min(Double(bytesSent) / Double(totalBytes), 1) : 1
    }
}

/// How requests reach Cloak: ``URLSessionTransport`` by default; tests and apps (a pinned
/// session, a mock) provide their own. Answers every HTTP status as a ``CloakResponse``; throws
/// only when there is no answer.
public protocol CloakTransport: Sendable {
    func send(_ request: CloakHTTPRequest) async throws -> CloakResponse
    /// Sends `request`, telling `progress` how much of its body has gone out; the last report
    /// has all of it. By default: ``send(_:)``, then one report at the end.
    func send(_ request: CloakHTTPRequest, progress: @escaping @Sendable (CloakUploadProgress) -> Void)
        async throws -> CloakResponse
}

extension CloakTransport {
    public func send(_ request: CloakHTTPRequest, progress: @escaping @Sendable (CloakUploadProgress) -> Void)
        async throws -> CloakResponse
    {
        let total = Int64(request.body?.count ?? 0)
        let answer = try await send(request)
        progress(CloakUploadProgress(bytesSent: total, totalBytes: total))
        return answer
    }
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
        try await perform(request, progress: nil)
    }

    /// Reports as the body goes out (a task delegate: Apple platforms); on Linux, whose
    /// FoundationNetworking has no task delegate, at the start and at the end only.
    public func send(_ request: CloakHTTPRequest, progress: @escaping @Sendable (CloakUploadProgress) -> Void)
        async throws -> CloakResponse
    {
        let total = Int64(request.body?.count ?? 0)
        #if canImport(FoundationNetworking)
            progress(CloakUploadProgress(bytesSent: 0, totalBytes: total))
            let answer = try await perform(request, progress: nil)
        #else
            let answer = try await perform(request, progress: progress)
        #endif
        progress(CloakUploadProgress(bytesSent: total, totalBytes: total))
        return answer
    }

    private func perform(_ request: CloakHTTPRequest, progress: (@Sendable (CloakUploadProgress) -> Void)?)
        async throws -> CloakResponse
    {
        var urlRequest = URLRequest(url: request.url)
        urlRequest.httpMethod = request.method
        urlRequest.httpBody = request.body
        for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        let session = self.session
        return try await withCheckedThrowingContinuation { continuation in
            let task = session.dataTask(with: urlRequest) { data, response, error in
                if let response = response as? HTTPURLResponse {
                    continuation.resume(returning: CloakResponse(status: response.statusCode, body: data ?? Data()))
                } else {
                    // The URL error's code says why (never a value: none is in the URL).
                    let reason = (error as? URLError).map { "URL error \($0.code.rawValue)" } ?? "no HTTP answer"
                    continuation.resume(
                        throwing: CloakCollectError(code: "no_answer", message: "Cloak did not answer (\(reason))"))
                }
            }
            #if !canImport(FoundationNetworking)
                // The task's own delegate (iOS 15, macOS 12): its upload progress, and no redirect.
                if let progress { task.delegate = UploadProgress(total: Int64(request.body?.count ?? 0), progress) }
            #endif
            task.resume()
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

    #if !canImport(FoundationNetworking)
        /// One task's delegate: reports the bytes sent, and follows no redirect either (a task's
        /// delegate is asked before the session's).
        private final class UploadProgress: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
            let total: Int64
            let progress: @Sendable (CloakUploadProgress) -> Void

            init(total: Int64, _ progress: @escaping @Sendable (CloakUploadProgress) -> Void) {
                self.total = total
                self.progress = progress
            }

            func urlSession(
                _ session: URLSession, task: URLSessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64,
                totalBytesExpectedToSend: Int64
            ) {
                let expected = totalBytesExpectedToSend > 0 ? totalBytesExpectedToSend : total
                progress(CloakUploadProgress(bytesSent: totalBytesSent, totalBytes: expected))
            }

            func urlSession(
                _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                newRequest request: URLRequest, completionHandler: @escaping (URLRequest?) -> Void
            ) {
                completionHandler(nil)
            }
        }
    #endif
}
