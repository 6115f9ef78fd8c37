/// A stored stream of sealed chunks (issue 76): a file's content, or one part of a job (its
/// input, mapping, advice, export, selection or approval), as ``ChunkSeal`` seals them. Each
/// kind has a table of its own (`file_chunks`, `job_chunks`), so a sweep of one never deletes
/// the other's, and a chunk of one kind never opens as the other's (the kind is in its
/// associated data). Both are read by one query, written here once for every store
/// (``ChunkStore/chunks(_:from:limit:)``).
package enum ChunkStream: Sendable, Equatable {
    case file(uploadID: String)
    case job(JobID, JobPart)

    /// A parameter that names the stream.
    enum Key: Equatable {
        case text(String)
        case int(Int64)
    }

    /// The stream's table and the columns that name it, with their values.
    var table: (name: String, keys: [(column: String, value: Key)]) {
        switch self {
        case let .file(uploadID): ("file_chunks", [("upload_id", .text(uploadID))])
        case let .job(id, part): ("job_chunks", [("job", .text(id.text)), ("part", .int(Int64(part.rawValue)))])
        }
    }

    /// `limit` chunks' sealed bytes from place `from` on, in order: the stream's keys are
    /// parameters 1..., then `from`, then `limit`; `parameter` spells parameter n as the store's
    /// SQL does (`?1`, or `$1` with a cast for an integer).
    func readQuery(_ parameter: (_ index: Int, _ isInt: Bool) -> String) -> String {
        let (name, keys) = table
        var clauses: [String] = []
        for (index, key) in keys.enumerated() {
            if case .int = key.value {
                clauses.append("\(key.column) = \(parameter(index + 1, true))")
            } else {
                clauses.append("\(key.column) = \(parameter(index + 1, false))")
            }
        }
        let from = parameter(keys.count + 1, true)
        let limit = parameter(keys.count + 2, true)
        return
            "SELECT sealed FROM \(name) WHERE \(clauses.joined(separator: " AND ")) AND idx >= \(from) ORDER BY idx LIMIT \(limit)"
    }
}

/// A store's chunk streams, read one way for both kinds.
package protocol ChunkStore: AnyObject {
    /// Up to `limit` sealed chunks of `stream` from place `from` on, in order.
    func chunks(_ stream: ChunkStream, from index: Int, limit: Int) throws(StoreError) -> [[UInt8]]
}

extension ChunkStore {
    package func fileChunks(uploadID: String, from index: Int, limit: Int) throws(StoreError) -> [[UInt8]] {
        try chunks(.file(uploadID: uploadID), from: index, limit: limit)
    }

    package func jobChunks(_ id: JobID, part: JobPart, from index: Int, limit: Int) throws(StoreError) -> [[UInt8]] {
        try chunks(.job(id, part), from: index, limit: limit)
    }
}
