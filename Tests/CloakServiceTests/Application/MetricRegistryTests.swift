import Testing

@testable import CloakService

/// The registry of the rarer metrics: Prometheus text, families and series in the order first
/// used, label values escaped.
struct MetricRegistryTests {
    @Test func countersAndGaugesAreWrittenAsPrometheusText() {
        let registry = MetricRegistry()
        registry.increment("cloak_b_total", help: "B things", labels: ["kind": "x"])
        registry.increment("cloak_a_total", help: "A things")
        registry.increment("cloak_b_total", help: "B things", labels: ["kind": "x"], by: 4)
        registry.increment("cloak_b_total", help: "B things", labels: ["kind": "y\"\\\n"])
        registry.set("cloak_c", help: "C", labels: ["route": "r", "status": "200"], to: 7)
        registry.set("cloak_c", help: "C", labels: ["route": "r", "status": "200"], to: 3)
        #expect(
            registry.exposition() == """
                # HELP cloak_b_total B things
                # TYPE cloak_b_total counter
                cloak_b_total{kind="x"} 5
                cloak_b_total{kind="y\\"\\\\\\n"} 1
                # HELP cloak_a_total A things
                # TYPE cloak_a_total counter
                cloak_a_total 1
                # HELP cloak_c C
                # TYPE cloak_c gauge
                cloak_c{route="r",status="200"} 3

                """)
        #expect(registry.value("cloak_b_total", labels: ["kind": "x"]) == 5)
        #expect(registry.value("cloak_b_total", labels: ["kind": "z"]) == nil)
    }

    @Test func anEmptyRegistryWritesNothing() {
        #expect(MetricRegistry().exposition().isEmpty)
    }
}
