import CGPGME
import Foundation

/// An OpenPGP message encrypted to one recipient's public key with GnuPG through GPGME (issue
/// 60: export files). The key is given with the job, ASCII-armored; it is imported into a GnuPG
/// home of this object's own (a fresh temporary directory, removed in `deinit`), never into the
/// operator's. The plaintext comes from `input` and the message goes to `output`, each in
/// pieces through GPGME's callbacks and GnuPG's pipes: neither is ever held whole or written
/// to a file.
///
/// One owner of one GPGME context and the key it encrypts to, released in `deinit`.
package final class OpenPGPEncryption {
    package typealias Failure = OpenPGPDecryption.Failure

    /// The largest armored key taken (a key with many signatures is still far below).
    package static let maxKeyBytes = 256 << 10

    private let context: gpgme_ctx_t
    private let home: String
    private var key: gpgme_key_t?
    /// The recipient's primary key fingerprint, 40 (or 64) upper-case hexadecimal digits.
    package let fingerprint: String

    /// Imports `armored`, which must be one OpenPGP public key (`-----BEGIN PGP PUBLIC KEY
    /// BLOCK-----`) that may be encrypted to now.
    /// How the homes this type makes are named in the temporary directory: the prefix, the
    /// maker's process id, a dash and mkdtemp's letters.
    static let homePrefix = "cloak-export-gpg-"

    /// Removes the GnuPG homes a process left behind when it was killed mid-export (review V,
    /// item 9): those named for a process that no longer runs, and those of older versions
    /// (no process id in the name) untouched for an hour. Never a running process's: another
    /// node of this host, or a `cloak export` under way. The homes removed.
    @discardableResult
    package static func removeStaleHomes(in directory: String = NSTemporaryDirectory()) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        var removed: [String] = []
        for name in names where name.hasPrefix(homePrefix) {
            let path = (directory as NSString).appendingPathComponent(name)
            let rest = name.dropFirst(homePrefix.count)
            let stale: Bool
            if let dash = rest.firstIndex(of: "-"), let pid = Int32(rest[..<dash]), pid > 0 {
                stale = kill(pid, 0) == -1 && errno == ESRCH
            } else {
                let modified = (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date
                stale = modified.map { Date().timeIntervalSince($0) > 3_600 } ?? false
            }
            if stale, (try? FileManager.default.removeItem(atPath: path)) != nil { removed.append(name) }
        }
        return removed
    }

    package init(publicKey armored: [UInt8]) throws(Failure) {
        guard armored.count <= Self.maxKeyBytes else {
            throw Failure(description: "the recipient's key is over \(Self.maxKeyBytes >> 10) KiB")
        }
        let text = String(decoding: armored, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        // One armored block, a public key's: GnuPG imports every block it is given, and a
        // private key's would start an agent for this home.
        guard text.hasPrefix("-----BEGIN PGP PUBLIC KEY BLOCK-----"),
            text.components(separatedBy: "-----BEGIN PGP").count == 2
        else {
            throw Failure(description: "the recipient must be one ASCII-armored OpenPGP public key block")
        }
        // The process's id in the name: a home whose process is gone (killed mid-export) is
        // found and removed at the next start (``removeStaleHomes()``).
        var template = Array(
            (NSTemporaryDirectory() + "/\(Self.homePrefix)\(getpid())-XXXXXX").utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw Failure(description: "cannot make a GnuPG home for the recipient's key")
        }
        home = String(cString: made)
        // No daemon for this home: gpg needs neither an agent nor keyboxd to encrypt to a
        // public key (an empty common.conf keeps a newer GnuPG from writing `use-keyboxd`).
        _ = FileManager.default.createFile(atPath: home + "/common.conf", contents: Data())
        _ = FileManager.default.createFile(atPath: home + "/gpg.conf", contents: Data("no-autostart\n".utf8))
        OpenPGPDecryption.initialise()
        var ctx: gpgme_ctx_t?
        guard Self.ok(gpgme_new(&ctx)), let ctx else {
            try? FileManager.default.removeItem(atPath: home)
            throw Failure(description: "GPGME could not start")
        }
        context = ctx
        guard Self.ok(gpgme_set_protocol(context, GPGME_PROTOCOL_OpenPGP)),
            Self.ok(gpgme_ctx_set_engine_info(context, GPGME_PROTOCOL_OpenPGP, nil, home))
        else {
            fingerprint = ""
            throw Failure(description: "GnuPG could not use a home of its own")
        }
        _ = gpgme_set_pinentry_mode(context, GPGME_PINENTRY_MODE_CANCEL)
        gpgme_set_armor(context, 0)
        var data: gpgme_data_t?
        let bytes = Array(text.utf8)
        let imported = bytes.withUnsafeBufferPointer { buffer in
            gpgme_data_new_from_mem(
                &data, UnsafeRawPointer(buffer.baseAddress!).assumingMemoryBound(to: CChar.self), buffer.count, 1)
        }
        guard Self.ok(imported), let data else {
            fingerprint = ""
            throw Failure(description: "GPGME could not read the recipient's key")
        }
        defer { gpgme_data_release(data) }
        guard Self.ok(gpgme_op_import(context, data)) else {
            fingerprint = ""
            throw Failure(description: "the recipient's key does not read as an OpenPGP key")
        }
        // What the home holds now is what the block held: exactly one key is a recipient.
        var keys: [gpgme_key_t] = []
        if Self.ok(gpgme_op_keylist_start(context, nil, 0)) {
            var next: gpgme_key_t?
            while Self.ok(gpgme_op_keylist_next(context, &next)), let found = next {
                keys.append(found)
                next = nil
            }
            _ = gpgme_op_keylist_end(context)
        }
        guard keys.count == 1, let only = keys.first, let fpr = only.pointee.fpr else {
            keys.forEach { gpgme_key_unref($0) }
            fingerprint = ""
            throw Failure(
                description: "the recipient's key block must hold exactly one public key (it holds \(keys.count))")
        }
        key = only
        fingerprint = String(cString: fpr)
        guard cloak_gpgme_key_can_encrypt(only) != 0 else {
            throw Failure(
                description:
                    "the recipient's key \(fingerprint) cannot be encrypted to (no encryption subkey, or revoked or expired)"
            )
        }
    }

    deinit {
        if let key { gpgme_key_unref(key) }
        gpgme_release(context)
        try? FileManager.default.removeItem(atPath: home)
    }

    /// Encrypts what `input` gives (nil: the end) to the recipient, handing the message to
    /// `output` piece by piece; returns once GnuPG has written all of it. An error `input` or
    /// `output` throws ends it and is thrown here.
    package func encrypt(input: @escaping () throws -> [UInt8]?, output: @escaping ([UInt8]) throws -> Void) throws {
        let pipe: GPGMEPipe
        do { pipe = try GPGMEPipe(input: input, output: output) } catch {
            throw Failure(description: "GPGME could not take the plaintext or the message")
        }
        var recipients: [gpgme_key_t?] = [key, nil]
        // The key was given with the job and its fingerprint approved by a second person: it
        // is trusted for this message, with no web of trust to consult.
        let error = withExtendedLifetime(pipe) {
            gpgme_op_encrypt(context, &recipients, GPGME_ENCRYPT_ALWAYS_TRUST, pipe.readable, pipe.writable)
        }
        if let failure = pipe.failure { throw failure }
        guard Self.ok(error) else { throw Failure(description: "GnuPG could not encrypt: \(Self.describe(error))") }
    }

    private static func ok(_ error: gpgme_error_t) -> Bool { gpgme_err_code(error) == GPG_ERR_NO_ERROR }

    private static func describe(_ error: gpgme_error_t) -> String {
        guard let text = gpgme_strerror(error) else { return "GPGME error \(error)" }
        return String(cString: text)
    }
}
