import CloakHTTP
import Testing

/// Route parameters by name, as the router sets them and puts them back when a branch fails.
@Suite struct RouteParametersTests {
    @Test func setReplaceRemove() {
        var p = RouteParameters()
        #expect(p["form"] == nil)
        p["form"] = "checkout"
        p["alias"] = "tok_1"
        #expect(p["form"] == "checkout" && p["alias"] == "tok_1" && p.count == 2)
        p["form"] = "other"
        #expect(p["form"] == "other" && p.count == 2)
        p["form"] = nil
        #expect(p["form"] == nil && p.count == 1)
        p["missing"] = nil
        #expect(p.count == 1)
    }

    @Test func equalityIgnoresOrder() {
        var a = RouteParameters()
        a["x"] = "1"
        a["y"] = "2"
        #expect(a == ["y": "2", "x": "1"])
        #expect(a != ["x": "1"])
        #expect(a != ["x": "1", "y": "3"])
        #expect(RouteParameters() == [:])
    }

    @Test func namesAreComparedExactly() {
        let p: RouteParameters = ["form": "a"]
        #expect(p["Form"] == nil)
        #expect(p["form "] == nil)
    }
}
