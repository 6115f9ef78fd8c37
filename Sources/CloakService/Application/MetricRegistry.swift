import Synchronization

/// The service's rarer metrics (reloads, limits, egress, refusals): counters and gauges by name
/// and labels, written as Prometheus text. The per-request pair has its own per-loop cells
/// (``RequestMetrics``); everything here is counted under one lock, a few times a second at most
/// (an egress request's two counters are the busiest).
///
/// A series is made on first use and kept: label values are route ids, formats, kinds, reasons
/// and statuses, from the configuration or fixed lists, never from a caller.
final class MetricRegistry: Sendable {
    enum Kind: String, Sendable {
        case counter, gauge
    }

    private struct Family {
        let help: String
        let kind: Kind
        /// Rendered label sets (`{a="1",b="2"}`, or empty) and values, in the order first seen.
        var series: [String: Int] = [:]
        var order: [String] = []
    }

    private struct State {
        var families: [String: Family] = [:]
        var order: [String] = []
    }

    private let state = Mutex(State())

    /// Adds `amount` to the counter `name` with `labels`.
    func increment(
        _ name: String, help: String, labels: KeyValuePairs<String, String> = [:], by amount: Int = 1
    ) {
        update(name, help: help, kind: .counter, labels: labels) { $0 += amount }
    }

    /// Sets the gauge `name` with `labels` (a count read when `/metrics` is served).
    func set(_ name: String, help: String, labels: KeyValuePairs<String, String> = [:], to value: Int) {
        update(name, help: help, kind: .gauge, labels: labels) { $0 = value }
    }

    /// The value of one series (tests, and counts that other metrics derive from).
    func value(_ name: String, labels: KeyValuePairs<String, String> = [:]) -> Int? {
        let key = Self.render(labels)
        return state.withLock { $0.families[name]?.series[key] }
    }

    private func update(
        _ name: String, help: String, kind: Kind, labels: KeyValuePairs<String, String>, _ change: (inout Int) -> Void
    ) {
        let key = Self.render(labels)
        state.withLock { state in
            if state.families[name] == nil {
                state.families[name] = Family(help: help, kind: kind)
                state.order.append(name)
            }
            if state.families[name]!.series[key] == nil { state.families[name]!.order.append(key) }
            change(&state.families[name]!.series[key, default: 0])
        }
    }

    /// The Prometheus text exposition of every family, in the order first used.
    func exposition() -> String {
        state.withLock { state in
            var out = ""
            for name in state.order {
                guard let family = state.families[name] else { continue }
                out += "# HELP \(name) \(family.help)\n# TYPE \(name) \(family.kind.rawValue)\n"
                for key in family.order { out += "\(name)\(key) \(family.series[key] ?? 0)\n" }
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
