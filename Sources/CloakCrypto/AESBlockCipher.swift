import COpenSSL
import Synchronization

/// AES (128, 192 or 256) on single 16-byte blocks, the building block of FF1's PRF.
///
/// Keeps one initialised `EVP_CIPHER_CTX` (key schedule done once) behind a mutex, so one
/// instance may be shared by threads; an uncontended lock costs far less than a new context.
final class AESBlockCipher: Sendable {
    private let context: Mutex<Context>

    private final class Context: @unchecked Sendable {
        // Only touched inside the Mutex.
        let ctx: CipherContext
        init(_ ctx: CipherContext) { self.ctx = ctx }
    }

    init(key: SymmetricKey) throws(CryptoError) {
        let cipher: OpaquePointer?
        switch key.count {
        case 16: cipher = EVP_aes_128_ecb()
        case 24: cipher = EVP_aes_192_ecb()
        case 32: cipher = EVP_aes_256_ecb()
        default: throw CryptoError("AES keys are 16, 24 or 32 bytes, not \(key.count)")
        }
        let ctx = try CipherContext()
        let rc = key.withBytes { k in EVP_EncryptInit_ex(ctx.pointer, cipher, nil, k, nil) }
        try check(rc, "EncryptInit(ECB)")
        try check(EVP_CIPHER_CTX_set_padding(ctx.pointer, 0), "set padding")
        context = Mutex(Context(ctx))
    }

    /// Runs `body` with a function that encrypts one block in place.
    func withEncryptor<R>(_ body: ((UnsafeMutablePointer<UInt8>) -> Void) -> R) -> R {
        context.withLock { c in
            let ctx = c.ctx.pointer
            return body { block in
                // EVP_Cipher goes straight to the provider's block function: no partial-block
                // buffering, about half EVP_EncryptUpdate's cost per 16-byte block.
                let rc = EVP_Cipher(ctx, block, block, 16)
                precondition(rc > 0, "AES block encryption failed")
            }
        }
    }
}
