import CloakCore
import CloakVault

/// What an import job reads and how (issue 60), as `cloak import` and `POST /admin/jobs/imports`
/// are asked for it: kept in the job's row (``StoredJob/spec``) so that any node can go on
/// with it. Names columns and formats only, never a value.
package struct ImportSpec: Sendable, Equatable {
    package enum Source: Sendable, Equatable {
        /// Each row is a submission of this form: its fields are the columns.
        case form(String)
        /// Each row is a value (`value`) to alias in this format.
        case format(AliasFormatName)
    }

    package enum Layout: String, Sendable, CaseIterable {
        /// RFC 4180, with a header line.
        case csv
        /// One JSON object of strings a line.
        case jsonl
    }

    package var source: Source
    package var layout: Layout
    /// `source=column,…`: the file's names for the columns read.
    package var map: String?
    /// The file's columns read past on purpose.
    package var ignored: [String]
    /// The file's name, as given (shown by status; never a path on a node).
    package var fileName: String?
    /// Rows the file holds, counted when it was stored (the progress bar's end).
    package var rows: Int64?

    package init(source: Source, layout: Layout, map: String? = nil, ignored: [String] = [], fileName: String? = nil) {
        self.source = source
        self.layout = layout
        self.map = map
        self.ignored = ignored
        // Caller text kept with the job and shown in its status: scrubbed (review V, item 7).
        self.fileName = fileName.map { Redaction.scrub($0, limit: 255) }
    }

    var json: JSONValue {
        var members: [(String, JSONValue)] = []
        switch source {
        case let .form(name): members.append(("form", .string(name)))
        case let .format(format): members.append(("format", .string(format.rawValue)))
        }
        members.append(("layout", .string(layout.rawValue)))
        if let map { members.append(("map", .string(map))) }
        if !ignored.isEmpty { members.append(("ignore_columns", .strings(ignored))) }
        if let fileName { members.append(("file", .string(fileName))) }
        if let rows { members.append(("rows", .int(Int(rows)))) }
        return .object(members)
    }

    package var encoded: [UInt8] { JSONWriter.encode(json) }

    /// The spec stored with a job; nil when it does not read (a row written by another version).
    package init?(stored bytes: [UInt8]) {
        guard case .object(let members)? = try? JSONParser().parse(bytes) else { return nil }
        let find = { (key: String) in members.first { $0.key == key }?.value }
        if let form = find("form")?.stringValue {
            source = .form(form)
        } else if let format = find("format")?.stringValue.flatMap(AliasFormatName.init(rawValue:)) {
            source = .format(format)
        } else {
            return nil
        }
        guard let layout = find("layout")?.stringValue.flatMap(Layout.init(rawValue:)) else { return nil }
        self.layout = layout
        map = find("map")?.stringValue
        if case .array(let items)? = find("ignore_columns") {
            ignored = items.compactMap(\.stringValue)
        } else {
            ignored = []
        }
        fileName = find("file")?.stringValue
        if case .number(let text)? = find("rows") { rows = Int64(text) }
    }
}
