import Instrumentation
import Synchronization
import Tracing

/// The key under which a span's ``TraceContext`` travels in an `InstrumentationContext`.
enum TraceContextKey: InstrumentationContextKey {
    typealias Value = TraceContext
    static var nameOverride: String? { "cloak-trace-context" }
}

/// A span as the exporter sends it: taken from a ``RecordedSpan`` when it ends, and from then
/// on only read (by ``OTLPTraceEncoding`` on the exporter's thread).
struct FinishedSpan: Sendable {
    var context: TraceContext
    var parentSpanID: SpanID?
    var name: String
    var kind: SpanKind
    var startNanoseconds: UInt64
    var endNanoseconds: UInt64
    /// In the order first set (a key set again keeps its place).
    var attributes: [SpanAttributeEntry]
    var events: [SpanEvent]
    var links: [SpanLink]
    var status: SpanStatus?
    /// Events and links past the span's bounds (OTLP's `dropped_events_count`, `dropped_links_count`).
    var droppedAttributes = 0
    var droppedEvents = 0
    var droppedLinks = 0
}

/// One span of ``CloakTracer``. A sampled span records what it is given until ``end(at:)``,
/// which hands it to the export once; an unsampled one (a caller's trace it was told not to
/// keep) has ids and a context to pass on, and records nothing.
///
/// Spans are ended on the thread that made them or on the vault's: the state is behind a lock.
/// Cloak sets attributes one at a time (``set(_:_:)``, under the lock); the protocol's
/// `attributes` reads and writes them whole.
/// Events and links are bounded (``maxEvents``, ``maxLinks``); past that they are counted as
/// dropped, as OTLP's `dropped_*_count` fields say.
final class RecordedSpan: Span {
    static let maxAttributes = 128
    static let maxEvents = 32
    static let maxLinks = 128

    /// The context its children start from: the parent's, with this span's ids.
    var context: InstrumentationContext {
        var context = parentContext
        context[TraceContextKey.self] = traceContext
        return context
    }
    let traceContext: TraceContext
    private let parentContext: InstrumentationContext
    private let parentSpanID: SpanID?
    private let kind: SpanKind
    private let startNanoseconds: UInt64
    private let sink: (any SpanSink)?
    private let state: Mutex<State>

    private struct State {
        var name: String
        var attributes: [SpanAttributeEntry] = []
        var droppedAttributes = 0
        var events: [SpanEvent] = []
        var links: [SpanLink] = []
        var status: SpanStatus?
        var droppedEvents = 0
        var droppedLinks = 0
        var ended = false
    }

    /// - Parameter sink: where the span goes when it ends; nil for a span that is not sampled.
    init(
        name: String, context: InstrumentationContext, traceContext: TraceContext, parent: SpanID?, kind: SpanKind,
        start: UInt64, sink: (any SpanSink)?
    ) {
        self.parentContext = context
        self.traceContext = traceContext
        self.parentSpanID = parent
        self.kind = kind
        self.startNanoseconds = start
        self.sink = sink
        var state = State(name: name)
        // Room for what Cloak sets on a span (at most 6), in one allocation.
        if sink != nil { state.attributes.reserveCapacity(6) }
        self.state = Mutex(state)
    }

    var isRecording: Bool { sink != nil && !state.withLock { $0.ended } }

    var operationName: String {
        get { state.withLock { $0.name } }
        set {
            guard sink != nil else { return }
            state.withLock { if !$0.ended { $0.name = newValue } }
        }
    }

    /// The protocol's whole-set view (``set(_:_:)`` is the way Cloak sets one).
    var attributes: SpanAttributes {
        get {
            var all = SpanAttributes()
            for entry in state.withLock({ $0.attributes }) { all[entry.key] = entry.value }
            return all
        }
        set {
            guard sink != nil else { return }
            var pairs: [(key: String, value: SpanAttribute)] = []
            newValue.forEach { pairs.append(($0, $1)) }
            state.withLock { state in
                guard !state.ended else { return }
                state.attributes = []
                state.droppedAttributes = 0
                for (key, value) in pairs { Self.set(key, value, in: &state) }
            }
        }
    }

    /// Sets one attribute (past ``maxAttributes`` distinct keys, counted as dropped).
    func set(_ key: String, _ value: some SpanAttributeConvertible) {
        guard sink != nil else { return }
        let attribute = value.toSpanAttribute()
        state.withLock { state in
            guard !state.ended else { return }
            Self.set(key, attribute, in: &state)
        }
    }

    private static func set(_ key: String, _ value: SpanAttribute, in state: inout State) {
        if let index = state.attributes.firstIndex(where: { $0.key == key }) {
            state.attributes[index].value = value
        } else if state.attributes.count < maxAttributes {
            state.attributes.append(SpanAttributeEntry(key: key, value: value))
        } else {
            state.droppedAttributes += 1
        }
    }

    func setStatus(_ status: SpanStatus) {
        guard sink != nil else { return }
        state.withLock { state in
            // An `ok` is final (OpenTelemetry): an error set after it does not replace it.
            guard !state.ended, state.status?.code != .ok else { return }
            state.status = status
        }
    }

    func addEvent(_ event: SpanEvent) {
        guard sink != nil else { return }
        state.withLock { state in
            guard !state.ended else { return }
            guard state.events.count < Self.maxEvents else { return state.droppedEvents += 1 }
            state.events.append(event)
        }
    }

    /// Records the error's type only: an error's text may hold what it was given, and nothing
    /// a caller sent may reach a span.
    func recordError<Instant: TracerInstant>(
        _ error: any Error, attributes: SpanAttributes, at instant: @autoclosure () -> Instant
    ) {
        guard sink != nil else { return }
        var eventAttributes = attributes
        eventAttributes["exception.type"] = String(describing: type(of: error))
        addEvent(SpanEvent(name: "exception", at: instant(), attributes: eventAttributes))
    }

    func addLink(_ link: SpanLink) {
        guard sink != nil, link.context[TraceContextKey.self] != nil else { return }
        state.withLock { state in
            guard !state.ended else { return }
            guard state.links.count < Self.maxLinks else { return state.droppedLinks += 1 }
            state.links.append(link)
        }
    }

    func end<Instant: TracerInstant>(at instant: @autoclosure () -> Instant) {
        guard let sink else { return }
        let end = instant().nanosecondsSinceEpoch
        let finished = state.withLock { state -> FinishedSpan? in
            guard !state.ended else { return nil }
            state.ended = true
            return FinishedSpan(
                context: traceContext, parentSpanID: parentSpanID, name: state.name, kind: kind,
                startNanoseconds: startNanoseconds, endNanoseconds: max(end, startNanoseconds),
                attributes: state.attributes, events: state.events, links: state.links, status: state.status,
                droppedAttributes: state.droppedAttributes, droppedEvents: state.droppedEvents,
                droppedLinks: state.droppedLinks)
        }
        if let finished { sink.add(finished) }
    }
}

/// One attribute of a span (a struct, not a tuple: arrays of tuples are copied through the
/// runtime's generic witnesses).
struct SpanAttributeEntry: Sendable, Equatable {
    var key: String
    var value: SpanAttribute
}

/// Where ended spans go (``TraceExport``'s queue).
protocol SpanSink: AnyObject, Sendable {
    func add(_ span: FinishedSpan)
}
