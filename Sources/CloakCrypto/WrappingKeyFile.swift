import Foundation

/// A key file (`vault.keys: file:PATH`) and what it holds:
///
/// - version 2, written since the ring moved into the store: only the wrapping key,
///   `{"format": 2, "wrapping_key": "<base64 of 32 bytes>"}`;
/// - version 1, written before: the whole ring in clear (``KeyRing/load(path:)``). It keeps
///   opening; its wrapping key is derived from its fingerprint key (``KeyRing/fileWrappingKey``).
///
/// Either is refused when group or others may read or write it, as ssh refuses a private key.
package enum WrappingKeyFile {
    package enum Contents: Sendable {
        case wrappingKey(SymmetricKey)
        case ring(KeyRing)
    }

    private struct File: Codable {
        var format: Int
        var wrapping_key: String
    }

    /// Reads a key file of either version.
    package static func load(path: String) throws(KeyRing.Error) -> Contents {
        let data: [UInt8]
        do throws(SecretFile.ReadFailure) { data = try SecretFile.read(path) } catch {
            throw KeyRing.Error(error.message(path: path))
        }
        if let file = try? JSONDecoder().decode(File.self, from: Data(data)), file.format == 2 {
            guard let key = Data(base64Encoded: file.wrapping_key), key.count == 32 else {
                throw KeyRing.Error("\(path): wrapping_key is not 32 bytes of base64")
            }
            return .wrappingKey(SymmetricKey(Array(key)))
        }
        return .ring(try KeyRing.load(path: path))
    }

    /// Writes a new version 2 file (mode 0600) with a random wrapping key; refuses to replace one.
    package static func create(path: String) throws(KeyRing.Error) -> SymmetricKey {
        let key = SymmetricKey.random()
        var json = Array(#"{"format":2,"wrapping_key":""#.utf8)
        json += Data(key.rawBytes).base64EncodedString().utf8
        json += Array("\"}\n".utf8)
        defer { for i in json.indices { json[i] = 0 } }
        do {
            try SecretFile.write(json, to: path, mode: 0o600, replace: false)
        } catch .exists {
            throw KeyRing.Error("\(path) already exists; refusing to overwrite keys")
        } catch {
            throw KeyRing.Error("cannot create \(path)")
        }
        return key
    }
}
