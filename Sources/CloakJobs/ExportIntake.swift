import CloakCore
import CloakCrypto
import CloakVault
import Dispatch

/// How an export job is asked for (issue 60), the same from `cloak export` and from `POST
/// /admin/jobs/exports`: the recipient's key read with GnuPG (one public key that may be
/// encrypted to; its fingerprint kept), the aliases listed (if any) checked and sealed as the
/// job's input, and the job queued for a node to count its selection.
package enum ExportIntake {
    /// The most aliases one list may name.
    package static let maxListed = 10_000_000
    /// The longest alias a list may name.
    static let maxAliasBytes = 128

    /// The fingerprint of the recipient's key, or why it cannot be encrypted to. One key at a
    /// time on a node (``keyQueue``): each is a GnuPG process.
    package static func fingerprint(of armored: [UInt8]) throws(CloakError) -> String {
        do { return try OpenPGPEncryption(publicKey: armored).fingerprint } catch {
            throw .malformed("recipient: \(error.description)")
        }
    }

    /// Where the API reads recipients' keys: serially, so that requests at once start one GnuPG
    /// process, not one each.
    package static let keyQueue = DispatchQueue(label: "cloak.export-keys")

    /// A list's aliases: one a line (blank lines and surrounding spaces skipped), each 1 to 128
    /// printable ASCII characters without spaces, at most ``maxListed``.
    package static func aliases(_ bytes: [UInt8]) throws(CloakError) -> [[UInt8]] {
        var out: [[UInt8]] = []
        var number = 0
        for raw in bytes.split(separator: 0x0A, omittingEmptySubsequences: false) {
            number += 1
            var line = raw[...]
            while let b = line.first, b == 0x20 || b == 0x09 || b == 0x0D { line = line.dropFirst() }
            while let b = line.last, b == 0x20 || b == 0x09 || b == 0x0D { line = line.dropLast() }
            if line.isEmpty { continue }
            guard line.count <= maxAliasBytes, line.allSatisfy({ (0x21...0x7E).contains($0) }) else {
                throw .malformed("the alias list's line \(number) is not an alias")
            }
            out.append(Array(line))
            guard out.count <= maxListed else { throw .malformed("the alias list names more than \(maxListed)") }
        }
        guard !out.isEmpty else { throw .malformed("the alias list names none") }
        return out
    }

    /// The job `spec` describes for `owner`, its key made by `seal` (for `id`), stored with
    /// `listed` (the aliases of an ``ExportSpec/Selection/aliases(_:)`` selection) as its input,
    /// and queued; refused past `openLimit` jobs of the owner's that have not ended. In the
    /// transaction under way.
    package static func store(
        id: JobID, spec: ExportSpec, listed: [[UInt8]], owner: String, seal: JobSeal, now: Int64, openLimit: Int,
        in store: any AliasStore
    ) throws -> StoredJob {
        let job = StoredJob(
            id: id, kind: .export, state: .receiving, spec: spec.encoded, owner: owner, keyID: seal.wrappedKey.keyID,
            wrappedKey: seal.wrappedKey.sealed, createdAt: now)
        guard try store.createJob(job, openLimit: openLimit) else { throw JobQuota.reached(openLimit) }
        var chunks: [[UInt8]] = []
        var chunk: [UInt8] = []
        for alias in listed {
            if chunk.count + alias.count + 1 > JobSeal.chunkLimit {
                chunks.append(chunk)
                chunk = []
            }
            chunk += alias
            chunk.append(0x0A)
        }
        if !chunk.isEmpty { chunks.append(chunk) }
        for (index, plain) in chunks.enumerated() {
            let sealed = try seal.seal(
                plain, part: JobPart.input.rawValue, index: index, isLast: index == chunks.count - 1)
            guard try store.appendJobInput(id, index: index, sealed: sealed, now: now) else {
                throw ImportIntake.Refused(description: "the job's input could not be stored")
            }
        }
        guard
            try store.setJobState(
                id, from: [.receiving], to: .queued, holder: nil, now: now, expiresAt: nil, failure: nil)
        else { throw ImportIntake.Refused(description: "the job could not be queued") }
        return try store.job(id) ?? job
    }
}
