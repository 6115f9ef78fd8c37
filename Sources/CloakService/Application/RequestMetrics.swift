import CloakHTTP
import Synchronization

/// `cloak_requests_total{route, status}` and `cloak_request_duration_seconds{route}`, counted
/// without a lock per request.
///
/// Each loop thread keeps its own map from (route, status) to a ``Cell`` of atomic counters
/// (``LoopHandle/local(for:make:)``), so recording an answer is a map lookup and a few
/// uncontended atomic adds. A lock is taken only when a loop meets a new (route, status) pair,
/// to list the cell for the exposition, and for answers recorded off their loop (in-process
/// callers), which share one map. `/metrics` sums the cells of every loop.
final class RequestMetrics: Sendable {
    /// Upper bounds of the duration buckets, in nanoseconds (the last bucket, `+Inf`, is implied).
    static let bounds: [Int] = [
        100_000, 250_000, 500_000, 1_000_000, 2_500_000, 5_000_000, 10_000_000, 25_000_000, 50_000_000,
        100_000_000, 250_000_000, 500_000_000, 1_000_000_000, 2_500_000_000, 5_000_000_000, 10_000_000_000,
    ]

    struct Key: Hashable {
        let route: String
        let status: Int
    }

    /// The counters of one (route, status) on one loop. Written by one thread at a time, read by
    /// the exposition from any thread.
    final class Cell: Sendable {
        let key: Key
        let count = Atomic<Int>(0)
        let sumNanoseconds = Atomic<Int>(0)
        /// Answers per bucket (not cumulative); those above the last bound are `count` minus their sum.
        let buckets = InlineArray<16, Atomic<Int>> { _ in Atomic(0) }

        init(_ key: Key) { self.key = key }

        func record(nanoseconds: Int) {
            count.wrappingAdd(1, ordering: .relaxed)
            sumNanoseconds.wrappingAdd(nanoseconds, ordering: .relaxed)
            for i in 0..<RequestMetrics.bounds.count where nanoseconds <= RequestMetrics.bounds[i] {
                buckets[i].wrappingAdd(1, ordering: .relaxed)
                return
            }
        }
    }

    /// One loop's cells by key, bound to that loop's thread (checked on every access).
    /// `@unchecked Sendable`: its one mutable field is that ``LoopBound`` value.
    final class LoopCells: @unchecked Sendable {
        struct State {
            var cells: [Key: Cell] = [:]
            /// The cell used last: a loop under load answers one route and status again and
            /// again, and comparing the same route string is cheaper than hashing it.
            var last: Cell?
        }

        @exclusivity(unchecked) var state: LoopBound<State>

        init(loop: LoopHandle) { state = LoopBound(State(), on: loop) }
    }

    /// Every cell made, for the exposition.
    private let all = Mutex<[Cell]>([])
    /// Cells for answers recorded off their loop.
    private let shared = Mutex<[Key: Cell]>([:])

    func record(route: String, status: Int, nanoseconds: Int, loop: LoopHandle?) {
        if let loop, let local = loop.local(for: self, make: { LoopCells(loop: loop) }) {
            if let last = local.state.value.last, last.key.status == status, last.key.route == route {
                return last.record(nanoseconds: nanoseconds)
            }
            let key = Key(route: route, status: status)
            if let cell = local.state.value.cells[key] {
                local.state.value.last = cell
                return cell.record(nanoseconds: nanoseconds)
            }
            let cell = Cell(key)
            local.state.value.cells[key] = cell
            local.state.value.last = cell
            all.withLock { $0.append(cell) }
            return cell.record(nanoseconds: nanoseconds)
        }
        let key = Key(route: route, status: status)
        let cell = shared.withLock { cells in
            if let found = cells[key] { return found }
            let made = Cell(key)
            cells[key] = made
            all.withLock { $0.append(made) }
            return made
        }
        cell.record(nanoseconds: nanoseconds)
    }

    /// Answered requests since start, and those answered 4xx and 5xx (the console's overview).
    func totals() -> (requests: Int, clientErrors: Int, serverErrors: Int) {
        var out = (requests: 0, clientErrors: 0, serverErrors: 0)
        for cell in all.withLock({ $0 }) {
            let count = cell.count.load(ordering: .relaxed)
            out.requests += count
            if (400..<500).contains(cell.key.status) { out.clientErrors += count }
            if cell.key.status >= 500 { out.serverErrors += count }
        }
        return out
    }

    /// The Prometheus text of both metrics, routes in order.
    func exposition() -> String {
        struct Totals {
            var count = 0
            var sum = 0
            var buckets = [Int](repeating: 0, count: RequestMetrics.bounds.count)
        }
        var counters: [Key: Int] = [:]
        var histograms: [String: Totals] = [:]
        for cell in all.withLock({ $0 }) {
            let count = cell.count.load(ordering: .relaxed)
            counters[cell.key, default: 0] += count
            var totals = histograms[cell.key.route] ?? Totals()
            totals.count += count
            totals.sum += cell.sumNanoseconds.load(ordering: .relaxed)
            for i in 0..<Self.bounds.count { totals.buckets[i] += cell.buckets[i].load(ordering: .relaxed) }
            histograms[cell.key.route] = totals
        }
        var out = "# HELP cloak_requests_total Answered requests by route and status\n"
        out += "# TYPE cloak_requests_total counter\n"
        for key in counters.keys.sorted(by: { ($0.route, $0.status) < ($1.route, $1.status) }) {
            out +=
                "cloak_requests_total{route=\"\(Self.label(key.route))\",status=\"\(key.status)\"} \(counters[key]!)\n"
        }
        out += "# HELP cloak_request_duration_seconds Time from arrival to answer\n"
        out += "# TYPE cloak_request_duration_seconds histogram\n"
        for route in histograms.keys.sorted() {
            let totals = histograms[route]!
            let label = Self.label(route)
            var cumulative = 0
            for (i, bound) in Self.bounds.enumerated() {
                // The bucket counts are read one by one while loops keep counting: never let the
                // cumulative series exceed the count read before them.
                cumulative = min(cumulative + totals.buckets[i], totals.count)
                out +=
                    "cloak_request_duration_seconds_bucket{route=\"\(label)\",le=\"\(Double(bound) / 1e9)\"} \(cumulative)\n"
            }
            out += "cloak_request_duration_seconds_bucket{route=\"\(label)\",le=\"+Inf\"} \(totals.count)\n"
            out += "cloak_request_duration_seconds_sum{route=\"\(label)\"} \(Double(totals.sum) / 1e9)\n"
            out += "cloak_request_duration_seconds_count{route=\"\(label)\"} \(totals.count)\n"
        }
        return out
    }

    /// A label value escaped as the text format requires (`\`, `"` and newlines).
    static func label(_ value: String) -> String {
        var out = ""
        for ch in value.unicodeScalars {
            switch ch {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.unicodeScalars.append(ch)
            }
        }
        return out
    }
}
