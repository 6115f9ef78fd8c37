extension CredentialRefresh {
    /// The document a node holds: the bytes it adopted last (nil: none yet) and what they hold.
    struct Held: Sendable, Equatable {
        var bytes: [UInt8]?
        var credentials = APICredentials()
    }

    /// Why a node refused the store's document.
    enum Refusal: String, Sendable {
        /// The node adopted a document and the store now has none (deleted in the database).
        case missing
        /// It does not read.
        case unreadable
        /// It has no MAC (from before documents were signed, or written without the key ring).
        case unsigned
        /// Its MAC is not its own: written without the key ring.
        case unverified
        /// It verifies, but its serial is not past the one the node holds (an older signed
        /// document replayed into the store, or a store restored from a backup).
        case rollback
    }

    /// What a node does with the document it read.
    enum Judgement: Sendable, Equatable {
        /// Nothing new: the document it holds (or the same signed contents in other bytes).
        case unchanged
        /// A document that verifies, past the one the node holds.
        case adopt(APICredentials)
        /// The node keeps what it holds; `found` is the refused document's serial when it verifies.
        case refuse(Refusal, found: Int64?)
    }

    /// The decision on `bytes` (nil: the store has no document), for a node that holds `held`:
    /// adopt a document only when it verifies and goes forward. Pure.
    static func judge(_ bytes: [UInt8]?, held: Held, seal: CredentialSeal) -> Judgement {
        if bytes == held.bytes { return .unchanged }
        guard let bytes else { return held.bytes == nil ? .unchanged : .refuse(.missing, found: nil) }
        let credentials: APICredentials
        do throws(APICredentials.Error) {
            credentials = try APICredentials.open(bytes, seal: seal)
        } catch {
            switch error.kind {
            case .unsigned: return .refuse(.unsigned, found: nil)
            case .unverified: return .refuse(.unverified, found: nil)
            default: return .refuse(.unreadable, found: nil)
            }
        }
        guard held.bytes != nil else { return .adopt(credentials) }
        if credentials.serial > held.credentials.serial { return .adopt(credentials) }
        if credentials == held.credentials { return .unchanged }
        return .refuse(.rollback, found: credentials.serial)
    }

    /// What the log says of a refusal: what was found, and what the node does.
    static func explanation(_ refusal: Refusal, holding held: Held) -> String {
        let found: String
        switch refusal {
        case .missing: found = "the store's API credentials document is gone (deleted in the database)"
        case .unreadable: found = "the store's API credentials document does not read"
        case .unsigned: found = APICredentials.Error.unsignedDocument.description
        case .unverified: found = APICredentials.Error.unverifiedDocument.description
        case .rollback:
            found =
                "the store's API credentials document is older than the one this node holds (an older signed "
                + "document put back into the store, or a store restored from a backup): revoked tokens stay revoked"
        }
        return held.bytes == nil
            ? found + "; this node honours no store token until the store holds a document that verifies"
            : found + "; this node keeps the tokens it holds and puts its document back in the store"
    }
}
