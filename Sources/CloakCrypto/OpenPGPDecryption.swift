import CGPGME
import Glibc

/// An OpenPGP message decrypted with GnuPG through GPGME (issue 60: import files encrypted to
/// the operator's key). The private key stays in the GnuPG home the configuration names; the
/// plaintext goes to `output` as GnuPG produces it, in pieces, and is never held whole.
///
/// What a caller must know: GnuPG checks the message's integrity (its MDC, or its AEAD tags)
/// only at the end, so every piece `output` took is untrusted until ``decrypt(file:output:)``
/// returns. It throws for a message without integrity protection, one altered or cut short,
/// one for no key in the home, and a message that is no OpenPGP at all; the caller then drops
/// what it was given.
///
/// One owner of one GPGME context, released in `deinit`.
package final class OpenPGPDecryption {
    package struct Failure: Error, CustomStringConvertible, Equatable {
        package let description: String
        /// GnuPG or GPGME could not be set up here (the home, the engine): not the file's fault.
        package var isSetup = false

        package init(description: String, isSetup: Bool = false) {
            self.description = description
            self.isSetup = isSetup
        }
    }

    private let context: gpgme_ctx_t

    /// A context on the GnuPG home `home` (a directory holding the private key).
    package init(home: String) throws(Failure) {
        Self.initialise()
        var made: gpgme_ctx_t?
        guard Self.ok(gpgme_new(&made)), let made else {
            throw Failure(description: "GPGME could not start", isSetup: true)
        }
        context = made
        guard Self.ok(gpgme_set_protocol(context, GPGME_PROTOCOL_OpenPGP)),
            Self.ok(gpgme_ctx_set_engine_info(context, GPGME_PROTOCOL_OpenPGP, nil, home))
        else { throw Failure(description: "GnuPG could not use the home \(home)", isSetup: true) }
        // Never a prompt: a key that needs a passphrase cannot decrypt here.
        _ = gpgme_set_pinentry_mode(context, GPGME_PINENTRY_MODE_CANCEL)
    }

    deinit { gpgme_release(context) }

    /// GPGME's own initialisation, once a process before any context is made (GPGME asks that
    /// its first `gpgme_check_version` not race with other threads' use of it).
    private static let initialised: Bool = {
        _ = gpgme_check_version(nil)
        return true
    }()

    static func initialise() { _ = initialised }

    /// Whether `bytes` (a file's first bytes, 64 or all of a shorter file) start like an
    /// encrypted OpenPGP message (RFC 9580): ASCII armor, or a first packet that is a session
    /// key's, public-key (tag 1, version 3 or 6) or symmetric-key (tag 3, version 4, 5 or 6),
    /// with a definite length a session key can have. The tag alone is not enough: 0xC3 is also
    /// how UTF-8 starts `À` to `ÿ`, so a CSV whose header begins `Über` would pass for one.
    package static func looksEncrypted(_ bytes: [UInt8]) -> Bool {
        if bytes.starts(with: Array("-----BEGIN PGP MESSAGE-----".utf8)) { return true }
        guard let first = bytes.first, first & 0x80 != 0 else { return false }
        func number(_ range: Range<Int>) -> Int? {
            guard range.upperBound <= bytes.count else { return nil }
            return bytes[range].reduce(0) { $0 << 8 | Int($1) }
        }
        let tag: UInt8
        let header: Int
        let length: Int?
        if first & 0x40 != 0 {
            // New format: the tag's low six bits; a one-, two- or five-octet length (a partial
            // length is not allowed for these packets).
            tag = first & 0x3F
            switch number(1..<2) {
            case let octet? where octet < 192: (header, length) = (2, octet)
            case let octet? where octet < 224:
                (header, length) = (3, number(2..<3).map { (octet - 192) << 8 + $0 + 192 })
            case 255?: (header, length) = (6, number(2..<6))
            default: return false
            }
        } else {
            // Old format: bits 5 to 2, then a one-, two- or four-octet length (not indeterminate).
            tag = (first >> 2) & 0x0F
            switch first & 0x03 {
            case 0: (header, length) = (2, number(1..<2))
            case 1: (header, length) = (3, number(1..<3))
            case 2: (header, length) = (5, number(1..<5))
            default: return false
            }
        }
        guard tag == 1 || tag == 3, let length, header < bytes.count else { return false }
        let version = bytes[header]
        let known = tag == 1 ? version == 3 || version == 6 : (4...6).contains(version)
        // At least a version, an algorithm and a key id or S2K; at most a 16384-bit RSA key's.
        return known && (4...4_096).contains(length)
    }

    /// Decrypts the message in the file at `path`, handing the plaintext to `output` piece by
    /// piece; returns once GnuPG has checked the whole message.
    package func decrypt(file path: String, output: @escaping ([UInt8]) throws -> Void) throws {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw Failure(description: "cannot read \(path)") }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        try decrypt(
            input: {
                var count: Int
                repeat {
                    count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                } while count < 0 && errno == EINTR
                guard count >= 0 else { throw Failure(description: "cannot read \(path)") }
                return count == 0 ? nil : Array(buffer[..<count])
            }, output: output)
    }

    /// Decrypts the message `input` gives piece by piece (nil: its end), handing the plaintext
    /// to `output` piece by piece; returns once GnuPG has checked the whole message. An error
    /// `input` or `output` throws ends it and is thrown here.
    package func decrypt(input: @escaping () throws -> [UInt8]?, output: @escaping ([UInt8]) throws -> Void) throws {
        let pipe: GPGMEPipe
        do { pipe = try GPGMEPipe(input: input, output: output) } catch {
            throw Failure(description: "GPGME could not take the file or its plaintext", isSetup: true)
        }
        let error = withExtendedLifetime(pipe) { gpgme_op_decrypt(context, pipe.readable, pipe.writable) }
        if let failure = pipe.failure { throw failure }
        guard Self.ok(error) else { throw Failure(description: "the file does not decrypt: \(Self.describe(error))") }
        // GnuPG 2.2 refuses such a message itself; checked here all the same.
        guard cloak_gpgme_result_has_no_mdc(gpgme_op_decrypt_result(context)) == 0 else {
            throw Failure(description: "the file has no integrity protection (no MDC, no AEAD): refused")
        }
    }

    private static func ok(_ error: gpgme_error_t) -> Bool { gpgme_err_code(error) == GPG_ERR_NO_ERROR }

    private static func describe(_ error: gpgme_error_t) -> String {
        guard let text = gpgme_strerror(error) else { return "GPGME error \(error)" }
        return String(cString: text)
    }
}
