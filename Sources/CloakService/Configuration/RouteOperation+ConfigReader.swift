import CloakCore
import CloakHTTP

extension Route.Operation {
    /// Reads a `request:` list: operations, then the steps that run after them (issue 49), in
    /// the order written. A step before an operation is refused: steps see the final bytes.
    static func readRequestList(_ node: ConfigNode?, at p: String, _ r: ConfigReader) -> ([Self], [Route.Step]) {
        guard let nodes = r.sequence(node, at: p) else { return ([], []) }
        var operations: [Self] = []
        var steps: [Route.Step] = []
        var firstStep: Int?
        for (i, node) in nodes.enumerated() {
            let at = "\(p)[\(i)]"
            if case .mapping(let members, _) = node, members.count == 1,
                Route.Step.names.contains(members[0].key)
            {
                firstStep = firstStep ?? i
                if let step = Route.Step.read(members[0].key, members[0].value, at: "\(at).\(members[0].key)", r) {
                    steps.append(step)
                }
            } else {
                if firstStep != nil {
                    r.issue(at, "steps run on the final bytes: put every redact and reveal before them", node)
                }
                if let operation = read(node, at: at, r) { operations.append(operation) }
            }
        }
        if let firstStep, let i = operations.firstIndex(where: \.revealsFiles) {
            r.issue(
                "\(p)[\(i)]",
                "a file revealed into the request streams it: the steps from \(p)[\(firstStep)] on need the whole body",
                nil)
        }
        return (operations, steps)
    }

    /// Reads a `response:` list: `jwe_decrypt` first (it opens the answer as it came), then the
    /// operations.
    static func readResponseList(_ node: ConfigNode?, at p: String, _ r: ConfigReader)
        -> ([Self], [Route.ResponseStep])
    {
        guard let nodes = r.sequence(node, at: p) else { return ([], []) }
        var operations: [Self] = []
        var steps: [Route.ResponseStep] = []
        for (i, node) in nodes.enumerated() {
            let at = "\(p)[\(i)]"
            if case .mapping(let members, _) = node, members.count == 1, members[0].key == "jwe_decrypt" {
                if !operations.isEmpty {
                    r.issue(at, "jwe_decrypt opens the answer as it came: put it before every redact and reveal", node)
                }
                if let step = Route.ResponseStep.read(members[0].value, at: "\(at).jwe_decrypt", r) {
                    steps.append(step)
                }
            } else if case .mapping(let members, _) = node, members.count == 1,
                Route.Step.names.contains(members[0].key)
            {
                r.issue(at, "\(members[0].key) is a request step; an answer takes jwe_decrypt", node)
            } else if let operation = read(node, at: at, r) {
                operations.append(operation)
            }
        }
        if steps.count > 1 { r.issue(p, "one jwe_decrypt is enough: an answer is opened once") }
        return (operations, steps)
    }

    /// Reads a `request:` or `response:` list of an inbound or egress route.
    static func readList(_ node: ConfigNode?, at p: String, _ r: ConfigReader) -> [Self] {
        guard let nodes = r.sequence(node, at: p) else { return [] }
        return nodes.enumerated().compactMap { i, node in read(node, at: "\(p)[\(i)]", r) }
    }

    /// Files are revealed on the way out only: an answer's operations cannot.
    static func refuseFileReveals(_ operations: [Self], at p: String, _ r: ConfigReader) {
        for (i, operation) in operations.enumerated() where operation.revealsFiles {
            r.issue("\(p)[\(i)]", "files are revealed into requests only (multipart, encoding)")
        }
    }

    /// Reads `{redact: {json, form, header, format, storage}}` or `{reveal: {json, form, header}}`.
    static func read(_ node: ConfigNode, at p: String, _ r: ConfigReader) -> Self? {
        guard let m = r.mapping(node, at: p, allowed: ["redact", "reveal"]) else { return nil }
        guard m.count == 1, let (key, body) = m.first else {
            r.issue(p, "expected one of {redact: {...}} or {reveal: {...}}", node)
            return nil
        }
        let action: Action = key == "reveal" ? .reveal : .redact
        let q = "\(p).\(key)"
        let allowed: Set<String> =
            action == .redact
            ? ["json", "form", "header", "format", "storage"] : ["json", "form", "header", "multipart", "encoding"]
        guard let o = r.mapping(body, at: q, allowed: allowed) else { return nil }
        var json: [JSONPath] = []
        var required: [String] = []
        for (i, (text, must)) in readSelectors(o["json"], at: "\(q).json", key: "path", r).enumerated() {
            do { json.append(try JSONPath(text)) } catch { r.issue("\(q).json[\(i)]", error.description) }
            if must { required.append(text) }
        }
        let forms = readSelectors(o["form"], at: "\(q).form", key: "name", r)
        let headers = readSelectors(o["header"], at: "\(q).header", key: "name", r)
        let form = forms.map(\.0)
        let header = headers.map(\.0)
        required += (forms + headers).filter(\.1).map(\.0)
        for (i, name) in header.enumerated() where !HTTPSyntax.isToken(name) {
            r.issue("\(q).header[\(i)]", "is not a header name")
        }
        for (i, name) in header.enumerated()
        where hopByHopHeaders.contains(name.lowercased())
            || ["host", "content-length", "content-type"].contains(name.lowercased())
        {
            r.issue("\(q).header[\(i)]", "\(name) describes the message or connection; it cannot carry a value")
        }
        let multipart = r.strings(o["multipart"], at: "\(q).multipart") ?? []
        var encoding: FileEncoding?
        if let name = r.string(o["encoding"], at: "\(q).encoding") {
            encoding = FileEncoding(rawValue: name)
            if encoding == nil { r.issue("\(q).encoding", "expected base64 (a file's content in JSON)") }
            if json.isEmpty || !form.isEmpty || !header.isEmpty || !multipart.isEmpty {
                r.issue("\(q).encoding", "reveals files into JSON: it goes with json only")
            }
        }
        if !multipart.isEmpty && (!json.isEmpty || !form.isEmpty || !header.isEmpty) {
            r.issue("\(q).multipart", "reveals files into multipart parts: it goes alone")
        }
        if json.isEmpty && form.isEmpty && header.isEmpty && multipart.isEmpty {
            r.issue(q, "selects nothing (json, form, header or multipart)")
        }
        let format = r.aliasFormat(o["format"], at: "\(q).format") ?? .UUID
        var storage = TokenizationSettings.Storage.persistent
        if let name = r.string(o["storage"], at: "\(q).storage") {
            if let s = TokenizationSettings.Storage(rawValue: name) {
                storage = s
            } else {
                r.issue("\(q).storage", "expected PERSISTENT or VOLATILE")
            }
        }
        if !required.isEmpty && !multipart.isEmpty {
            r.issue(q, "required selectors pick values, not files")
        }
        var operation = Self(
            action: action, format: format, storage: storage, json: json, form: form, header: header,
            multipart: multipart, encoding: encoding)
        operation.required = required
        return operation
    }

    /// A selector list: each item a selector, or `{<key>: selector, required: true}` (a message
    /// where it takes nothing is refused: 422 from a client, 502 from an upstream).
    private static func readSelectors(_ node: ConfigNode?, at p: String, key: String, _ r: ConfigReader)
        -> [(String, Bool)]
    {
        guard let items = r.sequence(node, at: p) else { return [] }
        var out: [(String, Bool)] = []
        for (i, item) in items.enumerated() {
            if case .scalar = item {
                if let text = r.string(item, at: "\(p)[\(i)]") { out.append((text, false)) }
                continue
            }
            guard let m = r.mapping(item, at: "\(p)[\(i)]", allowed: [key, "required"]) else { continue }
            guard let text = r.string(m[key], at: "\(p)[\(i)].\(key)") else {
                r.issue("\(p)[\(i)].\(key)", "is required", item)
                continue
            }
            out.append((text, m["required"].flatMap { r.bool($0, at: "\(p)[\(i)].required") } ?? false))
        }
        return out
    }
}
