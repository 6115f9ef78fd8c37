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
    package let settings: JobSettings
    package let forms: [String: FormSchema]

    package init(store: any AliasStore, ring: KeyRing, settings: JobSettings, forms: [String: FormSchema]) {
        self.store = store
        self.ring = ring
        self.settings = settings
        self.forms = forms
    }

    package struct Refused: Error, CustomStringConvertible {
        package let description: String
    }

    /// Checks `spec` and the file at `path` (header and rows counted), stores it, and queues
    /// the job for `owner`. An OpenPGP-encrypted file is decrypted with the key in
    /// `jobs.gnupg_home` twice: once whole, counted and its integrity checked by GnuPG before
    /// anything is stored (a file altered, cut short or without integrity protection stores
    /// nothing), then again as it is sealed into the store, checked again before the job is
    /// queued. The plaintext never touches the disk.
    package func start(spec: ImportSpec, owner: String, path: String, now: Int64) throws -> StoredJob {
        var spec = spec
        let plan: ImportPlan
        do { plan = try ImportPlan(spec, forms: forms) } catch {
            throw Refused(description: error.message)
        }
        let source = try Source(path: path, home: settings.gnupgHome)
        spec.rows = Int64(try count(source, plan: plan))
        let id = JobID.make(now: now)
        let seal = try JobSeal(
            newJob: id.text, binding: StoredJob.sealBinding(kind: .import, owner: owner, spec: spec.encoded), ring: ring
        )
        var job = StoredJob(
            id: id, kind: .import, state: .receiving, spec: spec.encoded, owner: owner, keyID: seal.wrappedKey.keyID,
            wrappedKey: seal.wrappedKey.sealed, createdAt: now)
        let limit = settings.maxOpenPerToken
        guard try transaction({ try store.createJob(job, openLimit: limit) }) else {
            throw Refused(description: JobQuota.reached(limit).message)
        }
        var input = JobInput(id: id, seal: seal, plan: plan)
        var chunks = 0
        do {
            try source.pieces { bytes in
                // Each chunk's own time: a long upload is not taken for an abandoned one.
                for chunk in try input.feed(bytes) {
                    try append(job, chunk, now: Int64(Date().timeIntervalSince1970))
                    chunks += 1
                }
            }
            try append(job, try input.finish(), now: Int64(Date().timeIntervalSince1970))
            chunks += 1
        } catch {
            // What was stored goes at once: the job fails with nothing left of its input.
            _ = try? transaction { try store.cancelJob(id, now: now, expiresAt: now + 86_400) }
            throw error
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

    private func append(_ job: StoredJob, _ chunk: (index: Int, sealed: [UInt8]), now: Int64) throws {
        let maxBytes = settings.maxInputMiB << 20
        let stored = try transaction { () throws -> Bool in
            do {
                try JobQuota.checkHeld(store, owner: job.owner, job: job.id, chunk: chunk, maxBytes: maxBytes)
            } catch let refused as CloakError {
                throw Refused(description: refused.message)
            }
            return try store.appendJobInput(job.id, index: chunk.index, sealed: chunk.sealed, now: now)
        }
        guard stored else {
            throw Refused(description: "the job stopped receiving (cancelled, or swept) before its file was stored")
        }
    }

    /// The rows of the file, read as a node will read them (a header problem refuses it).
    private func count(_ source: Source, plan: ImportPlan) throws -> Int {
        var reader = ImportReader(plan: plan)
        var rows = 0
        do {
            try source.pieces { bytes in rows += try reader.feed(bytes).count }
            rows += try reader.finish().count
        } catch let fatal as ImportReader.Fatal {
            throw Refused(description: "the file cannot be imported: \(fatal.description)")
        }
        return rows
    }

    /// The file as its plaintext, in pieces: read in 64 KiB pieces, or decrypted by GnuPG.
    package struct Source {
        let path: String
        /// The GnuPG home when the file is an OpenPGP message.
        let home: String?

        init(path: String, home: String?) throws {
            guard let handle = FileHandle(forReadingAtPath: path) else {
                throw Refused(description: "cannot read \(path)")
            }
            let start = [UInt8](try handle.read(upToCount: 64) ?? Data())
            try? handle.close()
            self.path = path
            guard OpenPGPDecryption.looksEncrypted(start) else {
                self.home = nil
                return
            }
            guard let home else {
                throw Refused(
                    description: "the file is OpenPGP-encrypted: set jobs.gnupg_home to the GnuPG home with its key")
            }
            self.home = home
        }

        func pieces(_ body: @escaping ([UInt8]) throws -> Void) throws {
            if let home {
                // The whole file is the ciphertext: its plaintext may be 100 times it at most.
                var inflation = InflationBound()
                let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
                inflation.read(size)
                do {
                    try OpenPGPDecryption(home: home).decrypt(file: path) { plaintext in
                        do throws(CloakError) { try inflation.wrote(plaintext.count) } catch {
                            throw Refused(description: error.message)
                        }
                        try body(plaintext)
                    }
                } catch let failure as OpenPGPDecryption.Failure {
                    throw Refused(description: "\(failure.description); nothing of it was imported")
                }
                return
            }
            guard let handle = FileHandle(forReadingAtPath: path) else {
                throw Refused(description: "cannot read \(path)")
            }
            defer { try? handle.close() }
            while let piece = try handle.read(upToCount: FileSeal.chunkSize), !piece.isEmpty {
                try body([UInt8](piece))
            }
        }
    }

    @discardableResult
    private func transaction<T>(_ body: () throws -> T) throws -> T { try store.transaction(body) }
}
