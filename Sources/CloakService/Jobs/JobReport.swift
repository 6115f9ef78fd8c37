import CloakCore
import CloakCrypto
import CloakVault
import Foundation

/// What a job is, for `cloak jobs` (and the admin API): its state, its counts and its
/// description: names of columns, forms and formats, never a value or a row id.
package enum JobReport {
    package static func json(_ job: StoredJob) -> JSONValue {
        let spec = ImportSpec(stored: job.spec)
        var members: [(String, JSONValue)] = [
            ("id", .string(job.id.text)), ("kind", .string(job.kind.rawValue)), ("state", .string(job.state.rawValue)),
            ("owner", .string(job.owner)),
        ]
        switch spec?.source {
        case let .form(name)?: members.append(("form", .string(name)))
        case let .format(format)?: members.append(("format", .string(format.rawValue)))
        case nil: break
        }
        if let file = spec?.fileName { members.append(("file", .string(file))) }
        if let layout = spec?.layout { members.append(("layout", .string(layout.rawValue))) }
        members += [
            ("rows_read", .int(Int(job.progress.cursor))), ("imported", .int(Int(job.progress.imported))),
            ("refused", .int(Int(job.progress.refused))),
        ]
        if let rows = spec?.rows { members.append(("rows", .int(Int(rows)))) }
        members += [
            ("created_at", .string(UTCTimestamp.string(seconds: Int(job.createdAt), milliseconds: 0))),
            ("updated_at", .string(UTCTimestamp.string(seconds: Int(job.updatedAt), milliseconds: 0))),
            (
                "expires_at",
                job.expiresAt.map { .string(UTCTimestamp.string(seconds: Int($0), milliseconds: 0)) } ?? .null
            ),
            ("failure", job.failure.map { .string($0) } ?? .null),
            ("lease_holder", job.lease.map { .string($0.holder) } ?? .null),
        ]
        return .object(members)
    }

    /// Writes a job's mapping or advice file: each chunk opened in its place, and the last one
    /// required (a stream cut short in the store is an error, not a shorter file).
    package static func output(
        _ job: StoredJob, _ part: JobPart, store: any AliasStore, ring: KeyRing, write: ([UInt8]) throws -> Void
    ) throws {
        let seal = try JobSeal(
            job: job.id.text, binding: job.sealBinding,
            wrappedKey: FileSeal.WrappedKey(keyID: job.keyID, sealed: job.wrappedKey), ring: ring)
        var index = 0
        var sawLast = false
        while !sawLast {
            let chunks = try store.jobChunks(job.id, part: part, from: index, limit: 16)
            guard !chunks.isEmpty else { break }
            for sealed in chunks where !sawLast {
                let opened = try seal.open(sealed, part: part.rawValue, index: index)
                try write(opened.bytes)
                sawLast = opened.isLast
                index += 1
            }
        }
        guard sawLast else {
            throw ImportIntake.Refused(
                description: job.state == .done
                    ? "the job's \(part.name) file is cut short in the store"
                    : "the job is \(job.state.rawValue): its \(part.name) file is whole once it is done")
        }
    }
}
