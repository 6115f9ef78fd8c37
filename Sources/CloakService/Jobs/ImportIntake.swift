import CloakCore
import CloakCrypto
import CloakVault
import Foundation

/// A new import job's input put in the store (issue 60): read once, each row counted and the
/// header checked (a file whose header cannot be imported is refused before anything is kept),
/// then sealed chunk by chunk under the job's own key (``JobSeal``), each chunk its own short
/// transaction, and the job queued once its last chunk is in. Nodes take it from there.
///
/// For `cloak import`, which holds the store and the key ring as every `cloak` command that
/// writes beside the records does.
package struct ImportIntake {
    package let store: any AliasStore
    package let ring: KeyRing
    package let configuration: ServiceConfiguration

    package init(store: any AliasStore, ring: KeyRing, configuration: ServiceConfiguration) {
        self.store = store
        self.ring = ring
        self.configuration = configuration
    }

    package struct Refused: Error, CustomStringConvertible {
        package let description: String
    }

    /// Checks `spec` and the file at `path` (header and rows counted), stores it, and queues
    /// the job for `owner`.
    package func start(spec: ImportSpec, owner: String, path: String, now: Int64) throws -> StoredJob {
        var spec = spec
        let plan: ImportPlan
        do { plan = try ImportPlan(spec, configuration: configuration) } catch {
            throw Refused(description: error.message)
        }
        spec.rows = Int64(try count(path, plan: plan))
        let id = JobID.make(now: now)
        let seal = try JobSeal(
            newJob: id.text, binding: StoredJob.sealBinding(kind: .import, owner: owner, spec: spec.encoded), ring: ring
        )
        var job = StoredJob(
            id: id, kind: .import, state: .receiving, spec: spec.encoded, owner: owner, keyID: seal.wrappedKey.keyID,
            wrappedKey: seal.wrappedKey.sealed, createdAt: now)
        try transaction { try store.createJob(job) }
        var input = JobInput(id: id, seal: seal, plan: plan)
        let chunks = try read(path) { _, bytes, isLast in
            var ready = try input.feed(bytes)
            if isLast { ready.append(try input.finish()) }
            // Each chunk's own time: a long upload is not taken for an abandoned one.
            for chunk in ready { try append(id, chunk, now: Int64(Date().timeIntervalSince1970)) }
        }
        guard
            try transaction({
                try store.setJobState(
                    id, from: [.receiving], to: .queued, holder: nil, now: now, expiresAt: nil, failure: nil)
            })
        else { throw Refused(description: "the job stopped receiving before it was queued") }
        job.state = .queued
        job.inputChunks = chunks
        return job
    }

    private func append(_ id: JobID, _ chunk: (index: Int, sealed: [UInt8]), now: Int64) throws {
        guard try transaction({ try store.appendJobInput(id, index: chunk.index, sealed: chunk.sealed, now: now) })
        else {
            throw Refused(description: "the job stopped receiving (cancelled, or swept) before its file was stored")
        }
    }

    /// The rows of the file, read as a node will read them (a header problem refuses it).
    private func count(_ path: String, plan: ImportPlan) throws -> Int {
        var reader = ImportReader(plan: plan)
        var rows = 0
        do {
            _ = try read(path) { _, bytes, isLast in
                rows += try reader.feed(bytes).count
                if isLast { rows += try reader.finish().count }
            }
        } catch let fatal as ImportReader.Fatal {
            throw Refused(description: "the file cannot be imported: \(fatal.description)")
        }
        return rows
    }

    /// Calls `body` with each 64 KiB piece of the file, saying which is the last; how many.
    private func read(_ path: String, _ body: (Int, [UInt8], Bool) throws -> Void) throws -> Int {
        guard let handle = FileHandle(forReadingAtPath: path) else { throw Refused(description: "cannot read \(path)") }
        defer { try? handle.close() }
        var index = 0
        var current = [UInt8](try handle.read(upToCount: FileSeal.chunkSize) ?? Data())
        while true {
            let next = [UInt8](try handle.read(upToCount: FileSeal.chunkSize) ?? Data())
            try body(index, current, next.isEmpty)
            index += 1
            if next.isEmpty { return index }
            current = next
        }
    }

    @discardableResult
    private func transaction<T>(_ body: () throws -> T) throws -> T {
        try store.begin()
        do {
            let result = try body()
            try store.commit()
            return result
        } catch {
            store.rollback()
            throw error
        }
    }
}
