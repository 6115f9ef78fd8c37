import CloakCore
import CloakCrypto
import Foundation
import Synchronization

extension Vault {
    // MARK: Alias signatures

    /// The MAC binding an alias (its text and format) to the record it points to.
    static func sign(_ alias: IssuedAlias, recordID: String, key: HMACKey) -> [UInt8] {
        // The bytes of "cloak/v1/alias\0<alias>\0<record id>\0<stored format>", appended in one
        // buffer (an interpolated String cost about 3,000 instructions a signature).
        var message: [UInt8] = []
        message.reserveCapacity(
            prefix.count + alias.alias.utf8.count + recordID.utf8.count + alias.format.rawValue.utf8.count + 16)
        message += prefix
        message += alias.alias.utf8
        message.append(0)
        message += recordID.utf8
        message.append(0)
        message += alias.format.rawValue.utf8
        if !alias.luhnValid { message += ";luhn=invalid".utf8 }
        return key.authenticate(message)
    }

    private static let prefix = Array("cloak/v1/alias\0".utf8)

    func isAuthentic(_ alias: IssuedAlias, recordID: String) -> Bool {
        !alias.mac.isEmpty && constantTimeEquals(alias.mac, Self.sign(alias, recordID: recordID, key: aliasMAC))
    }
}
