import CloakCore
import CloakVault

/// A rows export's lines (issue 76): a group a line, each field by its name (an import's row
/// id as `id`, an expiry as its form writes it), with the group's id and its parts' metadata
/// in columns whose `cloak:` names no field can take. A field the group lacks is left out of a
/// JSON line and empty in a CSV one. Every value is a string, so a second Cloak imports the
/// file as it is (`cloak import --map …`, reading past `cloak:group,cloak:metadata`).
extension ExportSpec {
    /// The column of a row's group id (empty for a record in no group).
    static let groupColumn = "cloak:group"
    /// The column of a row's metadata, a JSON object as text (`{}` for none).
    static let metadataColumn = "cloak:metadata"

    /// Refuses a selection the layout cannot take: a rows export selects groups by what their
    /// records hold (everything, a form, metadata, a classifier), not by a list of aliases.
    package static func check(_ selection: Selection, layout: Layout) throws(CloakError) {
        if layout.isRows, case .aliases = selection {
            throw .malformed("a rows export takes everything, a form, metadata or a classifier, not a list of aliases")
        }
    }

    /// A rows CSV's header line: the group, every field counted, the metadata.
    func rowsHeader(fields: [String]) -> [UInt8] {
        guard layout == .rowsCSV else { return [] }
        var out: [UInt8] = []
        for (i, name) in ([Self.groupColumn] + fields + [Self.metadataColumn]).enumerated() {
            if i > 0 { out.append(0x2C) }
            Self.csvField(name, into: &out)
        }
        return out + [0x0D, 0x0A]
    }

    /// The line of `row`, its fields in the order of `fields` (the count's).
    func rowLine(_ row: ExportGroupRow, fields: [String], into out: inout [UInt8]) {
        var writer = JSONWriter()
        RevealedRecord.writeMetadata(row.metadata, into: &writer)
        let metadata = String(decoding: writer.takeBytes(), as: UTF8.self)
        var values: [String: String] = [:]
        for part in row.parts where values[part.name] == nil { values[part.name] = part.value }
        switch layout {
        case .rowsCSV:
            let cells = [row.group ?? ""] + fields.map { values[$0] ?? "" } + [metadata]
            for (i, cell) in cells.enumerated() {
                if i > 0 { out.append(0x2C) }
                Self.csvField(cell, into: &out)
            }
            out += [0x0D, 0x0A]
        default:
            var members: [(String, JSONValue)] = [(Self.groupColumn, .string(row.group ?? ""))]
            for name in fields { if let value = values[name] { members.append((name, .string(value))) } }
            members.append((Self.metadataColumn, .string(metadata)))
            out += JSONWriter.encode(.object(members))
            out.append(0x0A)
        }
    }
}
