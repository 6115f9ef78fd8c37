import Foundation

/// Handles one request on its loop thread and returns the answer. Must not block: it runs on
/// the event loop, between other connections' reads.
public typealias HTTPHandler = @Sendable (HTTPRequest) -> HTTPResponse

/// Handles one request on its loop thread and answers through the responder, now or later from
/// another thread (work that would block, such as the vault store, runs elsewhere).
public typealias HTTPDeferredHandler = @Sendable (HTTPRequest, HTTPResponder) -> Void

public struct HTTPServerError: Error, Sendable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

/// The HTTP/1.1 server: one event loop per thread, each with its own SO_REUSEPORT listener, its
/// connections read by ``RequestParser`` and steered by ``ServerConnectionState``.
///
/// ```swift
/// let server = try HTTPServer(configuration: .init(port: 0, threads: 2)) { request in
///     .json(200, Array(#"{"ok":true}"#.utf8))
/// }
/// try server.start()
/// print(server.port)
/// server.shutdown()   // stop accepting, drain, join the threads
/// ```
public final class HTTPServer: Sendable {
    /// The configuration in force: `maxConnections` lowered under the descriptor limit if need be.
    public let configuration: HTTPServerConfiguration
    private let workers: [LoopWorker]
    private let finished: [DispatchSemaphore]
    /// The bound port (the chosen one when the configuration asked for 0).
    public let port: Int

    /// Creates and binds every loop; no thread runs until ``start()``.
    /// - Throws: ``HTTPServerError`` when the address cannot be parsed or bound.
    public convenience init(configuration: HTTPServerConfiguration, handler: @escaping HTTPHandler)
        throws(HTTPServerError)
    {
        try self.init(
            configuration: configuration, deferredHandler: { request, responder in responder.respond(handler(request)) }
        )
    }

    /// Creates and binds every loop for a handler that may answer later.
    /// - Parameter tunnels: makes this a forward-proxy door: each CONNECT is decided by it and an
    ///   opened tunnel's requests reach `handler` with their ``HTTPRequest/proxyTarget``.
    /// - Parameter watchdog: where each loop's heartbeat is registered (as `name`-index), for
    ///   `/readyz`.
    /// - Parameter route: asked once on each head with a body (by method and path as sent,
    ///   still percent-encoded): whether the body is streamed to the handler
    ///   (``HTTPRequest/bodyStream``), and what the router found (``HTTPRequest/route``); nil:
    ///   every body is read whole.
    public init(
        configuration: HTTPServerConfiguration, deferredHandler handler: @escaping HTTPDeferredHandler,
        tunnels: TunnelAuthorizer? = nil, watchdog: LoopWatchdog? = nil, name: String = "main",
        route: (@Sendable (HTTPMethod, String) -> HeadRoute)? = nil
    )
        throws(HTTPServerError)
    {
        ProcessLimits.ignoreBrokenPipes()
        var configuration = configuration
        let ceiling = ProcessLimits.connectionCeiling(descriptors: ProcessLimits.raiseDescriptorLimit())
        configuration.maxConnections = min(configuration.maxConnections, ceiling)
        let threads =
            configuration.threads > 0 ? configuration.threads : max(1, ProcessInfo.processInfo.activeProcessorCount)
        let budget = ConnectionBudget(limit: configuration.maxConnections)
        let addressBudget = AddressBudget(limitPerAddress: configuration.maxConnectionsPerAddress)
        let tls = try configuration.tls.map { files throws(HTTPServerError) in
            try TLSServerContext(certificateChain: files.certificateChain, privateKey: files.privateKey)
        }
        var workers: [LoopWorker] = []
        var hearts: [LoopWatchdog.Heartbeat] = []
        var port = configuration.port
        if port != 0 { try Sockets.refuseIfServed(host: configuration.host, port: port) }
        // Port 0: take a free port with a plain socket first. Binding port 0 directly with
        // SO_REUSEPORT can hand out a port another reuseport group of the same user already
        // holds, and the two servers would then share each other's connections. Between the two,
        // something else may take the port (an outgoing connection's ephemeral port, say): then
        // the loops made so far are dropped and another free port is tried, a few times.
        for attempt in 1...(configuration.port == 0 ? 5 : 1) {
            if configuration.port == 0 { port = try Sockets.freePort(host: configuration.host) }
            workers.removeAll()
            watchdog?.unregister(hearts)
            hearts.removeAll()
            do throws(HTTPServerError) {
                for index in 0..<threads {
                    let heart = watchdog?.register(name: "\(name)-\(index)", now: LoopWorker.now())
                    if let heart { hearts.append(heart) }
                    let worker = try LoopWorker(
                        configuration: configuration, handler: handler, budget: budget,
                        addressBudget: addressBudget, index: index, tls: tls, tunnels: tunnels,
                        heartbeat: heart, route: route)
                    try worker.bind(port: port)
                    port = worker.port  // with port 0, every later loop binds the port the first one got
                    workers.append(worker)
                }
                break
            } catch {
                if attempt == 5 || configuration.port != 0 || !error.description.contains("Address already in use") {
                    watchdog?.unregister(hearts)
                    throw error
                }
            }
        }
        self.configuration = configuration
        self.workers = workers
        self.finished = workers.map { _ in DispatchSemaphore(value: 0) }
        self.port = port
        self.watchdog = watchdog
        self.hearts = hearts
    }

    private let watchdog: LoopWatchdog?
    private let hearts: [LoopWatchdog.Heartbeat]

    public var threadCount: Int { workers.count }

    /// Starts one thread per loop and returns.
    public func start() {
        for (worker, done) in zip(workers, finished) {
            let thread = Thread {
                worker.run()
                done.signal()
            }
            thread.name = "cloak-loop"
            thread.start()
        }
    }

    /// Stops accepting, lets in-flight requests finish (up to the drain timeout), closes idle
    /// connections and waits for every loop thread to end.
    public func shutdown() {
        for worker in workers { worker.requestStop() }
        for done in finished { done.wait() }
        watchdog?.unregister(hearts)
    }
}
