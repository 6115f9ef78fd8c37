import CloakCrypto
import Foundation
import Synchronization

/// The audit chain of a command (`cloak keys`): one per process, named `cli:HOST/BOOT/0`, its
/// events written on the command's own store connection. A command runs one change and exits,
/// so a failed write ends its chain where it was (no later event follows a gap). Its head is
/// printed with the command's audit line (`audit head`), for `cloak audit verify --heads`.
package enum CommandAudit {
    private static let chain = Mutex<AuditChain?>(nil)

    /// Seals `drafts` as this process's next links and writes them (in the caller's transaction,
    /// when one is open); the chain's head after them.
    @discardableResult
    package static func append(_ drafts: [AuditEvent.Draft], keys: KeyRing, to store: any AliasStore)
        throws(StoreError) -> AuditVerifier.Head?
    {
        let (blocks, last) = chain.withLock { chain -> ([AuditBlock], Int64) in
            if chain == nil {
                chain = AuditChain(
                    id: "cli:\(ProcessInfo.processInfo.hostName)/\(AuditSettings.boot)/0",
                    key: keys.derivedMAC(purpose: AuditChain.keyPurpose))
            }
            return (chain!.seal(drafts), chain!.seq)
        }
        try store.appendAuditBlocks(blocks)
        return blocks.last.map { AuditVerifier.Head(chain: $0.chain, seq: last, mac: $0.mac) }
    }
}
