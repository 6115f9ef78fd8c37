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

    /// Which table, whatever the owner.
    enum Kind: Sendable {
        case file
        case job

        var table: String { self == .file ? "file_chunks" : "job_chunks" }
        /// The columns that name a stream, and whether each is an integer.
        var columns: [(name: String, isInt: Bool)] {
            self == .file ? [("upload_id", false)] : [("job", false), ("part", true)]
        }
    }

    var kind: Kind {
        if case .file = self { return .file }
        return .job
    }

    /// The values of ``Kind/columns``, in order.
    var keys: [Key] {
        switch self {
        case let .file(uploadID): [.text(uploadID)]
        case let .job(id, part): [.text(id.text), .int(Int64(part.rawValue))]
        }
    }

    /// `limit` chunks' sealed bytes from place `from` on, in order: the stream's keys are
    /// parameters 1..., then `from`, then `limit`; `parameter` spells parameter n as the store's
    /// SQL does (`?1`, or `$1` with a cast for an integer). Built once a kind by each store.
    static func readQuery(_ kind: Kind, _ parameter: (_ index: Int, _ isInt: Bool) -> String) -> String {
        let columns = kind.columns
        let clauses = columns.enumerated().map { "\($1.name) = \(parameter($0 + 1, $1.isInt))" }
        let from = parameter(columns.count + 1, true)
        let limit = parameter(columns.count + 2, true)
        return
            "SELECT sealed FROM \(kind.table) WHERE \(clauses.joined(separator: " AND ")) AND idx >= \(from) ORDER BY idx LIMIT \(limit)"
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
