import Synchronization

/// The service's rarer metrics (reloads, limits, egress, refusals): counters and gauges by name
/// and labels, written as Prometheus text. The per-request pair has its own per-loop cells
/// (``RequestMetrics``).
///
/// A series is made on first use and kept (``series(_:help:kind:labels:)``): label values are
/// route ids, formats, kinds, reasons and statuses, from the configuration or fixed lists, never
/// from a caller. A caller on a busy path keeps the ``Series`` it was given and counts on it
/// without the registry's lock (an egress request's two counters).
final class MetricRegistry: Sendable {
    enum Kind: String, Sendable {
        case counter, gauge
    }

    /// One series' value.
    final class Series: Sendable {
        private let value = Atomic<Int>(0)
        func add(_ amount: Int) { value.add(amount, ordering: .relaxed) }
        func set(_ amount: Int) { value.store(amount, ordering: .relaxed) }
        var current: Int { value.load(ordering: .relaxed) }
    }

    private struct Family {
        let help: String
        let kind: Kind
        /// Rendered label sets (`{a="1",b="2"}`, or empty) and their series, in the order first seen.
        var series: [String: Series] = [:]
        var order: [String] = []
    }

    private struct State {
        var families: [String: Family] = [:]
        var order: [String] = []
    }

    private let state = Mutex(State())

    /// The series of `name` with `labels`, made on first use.
    func series(_ name: String, help: String, kind: Kind, labels: KeyValuePairs<String, String> = [:]) -> Series {
        let key = Self.render(labels)
        return state.withLock { state in
            if state.families[name] == nil {
                state.families[name] = Family(help: help, kind: kind)
                state.order.append(name)
            }
            if let found = state.families[name]!.series[key] { return found }
            let made = Series()
            state.families[name]!.series[key] = made
            state.families[name]!.order.append(key)
            return made
        }
    }

    /// Adds `amount` to the counter `name` with `labels`.
    func increment(
        _ name: String, help: String, labels: KeyValuePairs<String, String> = [:], by amount: Int = 1
    ) {
        series(name, help: help, kind: .counter, labels: labels).add(amount)
    }

    /// Sets the gauge `name` with `labels` (a count read when `/metrics` is served).
    func set(_ name: String, help: String, labels: KeyValuePairs<String, String> = [:], to value: Int) {
        series(name, help: help, kind: .gauge, labels: labels).set(value)
    }

    /// Sets the gauge `name` to one series, `labels`, dropping any other it had (an info metric
    /// whose labels change: the node's BIN table).
    func replace(_ name: String, help: String, labels: KeyValuePairs<String, String>, to value: Int) {
        let key = Self.render(labels)
        state.withLock { state in
            if state.families[name] == nil {
                state.families[name] = Family(help: help, kind: .gauge)
                state.order.append(name)
            }
            // One lock for the reset and the new series: two scrapes at once leave one series.
            if state.families[name]!.order != [key] {
                let made = Series()
                state.families[name]!.series = [key: made]
                state.families[name]!.order = [key]
            }
            state.families[name]!.series[key]!.set(value)
        }
    }

    /// The value of one series (tests, and counts that other metrics derive from).
    func value(_ name: String, labels: KeyValuePairs<String, String> = [:]) -> Int? {
        let key = Self.render(labels)
        return state.withLock { $0.families[name]?.series[key]?.current }
    }

    /// The Prometheus text exposition of every family, in the order first used.
    func exposition() -> String {
        state.withLock { state in
            var out = ""
            for name in state.order {
                guard let family = state.families[name] else { continue }
                out += "# HELP \(name) \(family.help)\n# TYPE \(name) \(family.kind.rawValue)\n"
                for key in family.order { out += "\(name)\(key) \(family.series[key]?.current ?? 0)\n" }
            }
            return out
        }
    }

    /// `{name="value",…}` with the text format's escapes (backslash, quote, newline).
    static func render(_ labels: KeyValuePairs<String, String>) -> String {
        guard !labels.isEmpty else { return "" }
        return "{" + labels.map { "\($0.key)=\"\(RequestMetrics.label($0.value))\"" }.joined(separator: ",") + "}"
    }
}

extension MetricRegistry {
    /// Counts a file revealed (`GET /files/{alias}`, or into a request upstream) and its bytes.
    func fileRevealed(bytes: Int) {
        increment("cloak_files_reveals_total", help: "Files revealed (downloaded, or sent upstream by a route)")
        increment("cloak_files_revealed_bytes_total", help: "Bytes of files revealed", by: bytes)
    }
}

extension MetricRegistry {
    /// The series of `name` by rendered label set (`{outcome="stored"}`, or empty): the
    /// console's overview reads this node's own counts.
    func values(_ name: String) -> [String: Int] {
        state.withLock { state in
            guard let family = state.families[name] else { return [:] }
            return family.series.mapValues(\.current)
        }
    }
}
