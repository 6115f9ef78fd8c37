import Dispatch
import Synchronization

/// Runs `tick` every `interval` seconds on a queue of its own, from ``start()`` until ``stop()``
/// (the key ring's and the API credentials' refresh). Started once; a source released while
/// never resumed would trap in libdispatch, so the source is made only by `start`.
final class RepeatingTimer: Sendable {
    /// A dispatch timer: its calls are thread-safe.
    private final class Source: @unchecked Sendable {
        let source: any DispatchSourceTimer
        init(label: String) { source = DispatchSource.makeTimerSource(queue: DispatchQueue(label: label)) }
    }

    private let label: String
    private let interval: Int
    private let made = Mutex<Source?>(nil)

    init(label: String, interval: Int) {
        self.label = label
        self.interval = interval
    }

    func start(_ tick: @escaping @Sendable () -> Void) {
        let source = made.withLock { current -> Source? in
            guard current == nil else { return nil }
            current = Source(label: label)
            return current
        }
        guard let source else { return }
        source.source.schedule(deadline: .now() + .seconds(interval), repeating: .seconds(interval))
        source.source.setEventHandler(handler: tick)
        source.source.resume()
    }

    func stop() { made.withLock { $0 }?.source.cancel() }
}
