import CloakCore
import CloakCrypto
import CloakHTTP
import CloakVault
import Dispatch
import Foundation
import Synchronization

/// What one token's jobs may take: `jobs.max_open_per_token` jobs that have not ended, and
/// `jobs.max_input_mib` of input in all its imports.
package enum JobQuota {
    package static func reached(_ limit: Int) -> CloakError {
        CloakError(
            .tooManyRequests,
            "the token has \(limit) jobs that have not ended (jobs.max_open_per_token): wait for one, or cancel one")
    }

    /// Checks, in the transaction that stores `chunk` of `owner`'s import `job`, that the input
    /// of the token's imports stays within `maxBytes` (`jobs.max_input_mib`) in all (review V,
    /// item 9: eight imports of a token held eight times the limit): the chunks its other
    /// imports hold (``AliasStore/jobInputChunks(owner:except:)``, each a full chunk but a
    /// job's last, so counted whole) and this one's up to `chunk`.
    package static func checkHeld(
        _ store: any AliasStore, owner: String, job: JobID, chunk: (index: Int, sealed: [UInt8]), maxBytes: Int
    ) throws {
        let mine = chunk.index * FileSeal.chunkSize + min(chunk.sealed.count, FileSeal.chunkSize)
        let others = try store.jobInputChunks(owner: owner, except: job)
        guard others * FileSeal.chunkSize + mine <= maxBytes else { throw held(maxBytes) }
    }

    static func held(_ maxBytes: Int) -> CloakError {
        CloakError(
            .payloadTooLarge,
            "the token's imports would hold more than jobs.max_input_mib (\(maxBytes >> 20) MiB) of input in all: "
                + "wait for one to end, or let a cancelled one expire; nothing was imported")
    }
}
