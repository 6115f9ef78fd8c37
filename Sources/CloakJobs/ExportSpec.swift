import CloakCore
import CloakCrypto
import CloakVault

/// What an export job takes and for whom (issue 60), as `cloak export` and `POST
/// /admin/jobs/exports` are asked for it: kept in the job's row (``StoredJob/spec``), to which
/// the job's key is bound, so a database writer who changes the selection or the recipient
/// finds the job no longer opens. Names a selection and a key, never a value.
package struct ExportSpec: Sendable, Equatable {
    package enum Selection: Sendable, Equatable {
        case everything
        /// Records whose metadata holds every pair.
        case metadata([String: String])
        case classifier(String)
        /// Records stored through this form (``FormSubmission/classifier(form:)``).
        case form(String)
        /// The aliases listed in the job's input, one a line (this many).
        case aliases(Int64)
    }

    package enum Layout: String, Sendable, CaseIterable {
        /// RFC 4180 with a header line: `id,alias,value,format,created_at`.
        case csv
        /// A JSON object of strings a line: `id`, `alias`, `value`, `format`, `created_at`.
        case jsonl
        /// A group a line (issue 76), JSON Lines: each field by its name, `cloak:group` and
        /// `cloak:metadata` (``ExportSpec/rowLine(_:fields:into:)``).
        case rows
        /// The same rows as RFC 4180 with a header line.
        case rowsCSV = "rows_csv"

        /// A group a line rather than a value a line.
        package var isRows: Bool { self == .rows || self == .rowsCSV }
        /// Written as CSV.
        var isCSV: Bool { self == .csv || self == .rowsCSV }
        /// The layouts, as an error names them.
        package static let names = allCases.map(\.rawValue).joined(separator: ", ")
    }

    package var selection: Selection
    package var layout: Layout
    /// The recipient's public key, ASCII-armored.
    package var recipient: String
    /// Its primary key's fingerprint, read when the job was asked for.
    package var fingerprint: String
    /// The person who asked (their token's): an approval by the same person is refused.
    package var person: String

    package init(selection: Selection, layout: Layout, recipient: String, fingerprint: String, person: String) {
        self.selection = selection
        self.layout = layout
        self.recipient = recipient
        self.fingerprint = fingerprint
        self.person = person
    }

    /// The filter of this selection, counted at `asOf`.
    package func filter(asOf: Int64) -> ExportFilter {
        switch selection {
        case .everything: ExportFilter(match: .everything, asOf: asOf)
        case let .metadata(pairs): ExportFilter(match: .metadata(pairs), asOf: asOf)
        case let .classifier(name): ExportFilter(match: .classifier(name), asOf: asOf)
        case let .form(name): ExportFilter(match: .classifier(FormSubmission.classifier(form: name)), asOf: asOf)
        case .aliases: ExportFilter(match: .listed, asOf: asOf)
        }
    }

    /// The selection as status shows it and as its digest covers it.
    package var selectionJSON: JSONValue {
        switch selection {
        case .everything: .object([("everything", .bool(true))])
        case let .metadata(pairs):
            .object([("metadata", .object(pairs.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) }))])
        case let .classifier(name): .object([("classifier", .string(name))])
        case let .form(name): .object([("form", .string(name))])
        case let .aliases(count): .object([("aliases", .int(Int(count)))])
        }
    }

    /// The selection in an audit event or a log line (long digit runs scrubbed: a metadata value
    /// is the caller's words).
    package var selectionText: String {
        Redaction.scrub(String(decoding: JSONWriter.encode(selectionJSON), as: UTF8.self), limit: 200)
    }

    var json: JSONValue {
        .object([
            ("selection", selectionJSON), ("layout", .string(layout.rawValue)), ("recipient", .string(recipient)),
            ("fingerprint", .string(fingerprint)), ("person", .string(person)),
        ])
    }

    package var encoded: [UInt8] { JSONWriter.encode(json) }

    /// The spec stored with a job; nil when it does not read.
    package init?(stored bytes: [UInt8]) {
        guard let document = try? JSONParser().parse(bytes), case .object = document,
            let layout = document["layout"]?.stringValue.flatMap(Layout.init(rawValue:)),
            let recipient = document["recipient"]?.stringValue, let fingerprint = document["fingerprint"]?.stringValue,
            let person = document["person"]?.stringValue, let selection = document["selection"].flatMap(Self.selection)
        else { return nil }
        self.init(selection: selection, layout: layout, recipient: recipient, fingerprint: fingerprint, person: person)
    }

    /// A selection as status shows it (and as `POST /admin/jobs/exports` takes it, with
    /// `aliases` an array there).
    package static func selection(_ value: JSONValue) -> Selection? {
        guard case let .object(members) = value, members.count == 1, let (key, inner) = members.first else {
            return nil
        }
        switch (key, inner) {
        case ("everything", .bool(true)): return .everything
        case ("classifier", .string(let name)): return .classifier(name)
        case ("form", .string(let name)): return .form(name)
        case ("metadata", .object(let pairs)):
            var out: [String: String] = [:]
            for (k, v) in pairs {
                guard let text = v.stringValue else { return nil }
                out[k] = text
            }
            return out.isEmpty ? nil : .metadata(out)
        case ("aliases", .number(let text)): return Int64(text).map { .aliases($0) }
        default: return nil
        }
    }

    /// The lines a row becomes in this layout (the CSV's header is ``header``).
    func line(_ row: ExportRow, into out: inout [UInt8]) {
        let created = RevealedRecord.iso8601(row.createdAt)
        switch layout {
        case .jsonl:
            out += JSONWriter.encode(
                .object([
                    ("id", .string(row.record)), ("alias", .string(row.alias)), ("value", .string(row.value)),
                    ("format", .string(row.format.rawValue)), ("created_at", .string(created)),
                ]))
            out.append(0x0A)
        case .csv, .rows, .rowsCSV:
            for (i, field) in [row.record, row.alias, row.value, row.format.rawValue, created].enumerated() {
                if i > 0 { out.append(0x2C) }
                Self.csvField(field, into: &out)
            }
            out += [0x0D, 0x0A]
        }
    }

    /// A value layout's CSV header (a rows layout's is ``rowsHeader(fields:)``).
    var header: [UInt8] { layout == .csv ? Array("id,alias,value,format,created_at\r\n".utf8) : [] }

    /// A CSV field, quoted when it holds a comma, a quote or a line break (RFC 4180). A field
    /// that starts with `=`, `+`, `-`, `@`, a tab or a carriage return, which a spreadsheet would
    /// run as a formula, is written quoted behind a `'` so that it is taken as text (OWASP's CSV
    /// injection advice; review V, item 9): the value read back then starts with that `'`.
    static func csvField(_ text: String, into out: inout [UInt8]) {
        var bytes = Array(text.utf8)
        let formula = bytes.first.map { [0x3D, 0x2B, 0x2D, 0x40, 0x09, 0x0D].contains($0) } ?? false
        if formula { bytes.insert(0x27, at: 0) }
        guard formula || bytes.contains(where: { $0 == 0x2C || $0 == 0x22 || $0 == 0x0D || $0 == 0x0A }) else {
            out += bytes
            return
        }
        out.append(0x22)
        for b in bytes {
            if b == 0x22 { out.append(0x22) }
            out.append(b)
        }
        out.append(0x22)
    }
}
