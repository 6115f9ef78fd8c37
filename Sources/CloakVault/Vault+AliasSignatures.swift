import CloakCore
import CloakCrypto
import Foundation
import Synchronization

extension Vault {
    // MARK: Alias signatures

    /// The MAC binding an alias (its text and format) to the record it points to.
    static func sign(_ alias: IssuedAlias, recordID: String, key: HMACKey) -> [UInt8] {
        var message = "cloak/v1/alias\0\(alias.alias)\0\(recordID)\0\(alias.storedFormat)"
        return message.withUTF8 { key.authenticate(UnsafeRawBufferPointer($0)) }
    }

    func isAuthentic(_ alias: IssuedAlias, recordID: String) -> Bool {
        !alias.mac.isEmpty && constantTimeEquals(alias.mac, Self.sign(alias, recordID: recordID, key: keys.aliasMAC))
    }
}
