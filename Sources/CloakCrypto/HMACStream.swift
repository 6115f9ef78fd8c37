import COpenSSL

/// HMAC-SHA-256 of a message that arrives in pieces (a file's content, issue 47), under an
/// ``HMACKey``: the key's inner state is copied once, each piece hashed as it comes, and the
/// outer hash made at ``finalize()``. The one owner of its OpenSSL context (freed, and so wiped,
/// in `deinit`). Not thread-safe; one message per stream.
package final class HMACStream {
    private let key: HMACKey
    private let ctx: OpaquePointer
    private var finished = false

    package init(_ key: HMACKey) {
        guard let ctx = EVP_MD_CTX_new(), key.copyInner(into: ctx) else { fatalError("EVP_MD_CTX_new failed") }
        self.key = key
        self.ctx = ctx
    }

    deinit { EVP_MD_CTX_free(ctx) }

    package func update(_ data: UnsafeRawBufferPointer) {
        precondition(!finished, "an HMAC stream updated after its end")
        precondition(data.isEmpty || EVP_DigestUpdate(ctx, data.baseAddress, data.count) == 1, "HMAC-SHA-256 failed")
    }

    package func update(_ data: some Collection<UInt8>) {
        let done: Void? = data.withContiguousStorageIfAvailable { update(UnsafeRawBufferPointer($0)) }
        if done == nil { Array(data).withUnsafeBytes { update($0) } }
    }

    /// The MAC of everything given.
    package func finalize() -> [UInt8] {
        precondition(!finished, "an HMAC stream finalized twice")
        finished = true
        var length: UInt32 = 0
        var inner = [UInt8](repeating: 0, count: 32)
        defer { inner.withUnsafeMutableBytes { OPENSSL_cleanse($0.baseAddress, 32) } }
        let ok = inner.withUnsafeMutableBytes { EVP_DigestFinal_ex(ctx, $0.baseAddress, &length) == 1 } && length == 32
        precondition(ok, "HMAC-SHA-256 failed")
        return key.outerMAC(ofInner: inner)
    }
}

extension HMACKey {
    /// Starts `ctx` from the key's inner state.
    func copyInner(into ctx: OpaquePointer) -> Bool { EVP_MD_CTX_copy_ex(ctx, innerState) == 1 }

    /// The outer hash over an inner digest.
    func outerMAC(ofInner digest: [UInt8]) -> [UInt8] {
        guard let ctx = EVP_MD_CTX_new() else { fatalError("EVP_MD_CTX_new failed") }
        defer { EVP_MD_CTX_free(ctx) }
        var length: UInt32 = 0
        var out = [UInt8](repeating: 0, count: 32)
        let ok = out.withUnsafeMutableBytes { o in
            digest.withUnsafeBytes { d in
                EVP_MD_CTX_copy_ex(ctx, outerState) == 1 && EVP_DigestUpdate(ctx, d.baseAddress, 32) == 1
                    && EVP_DigestFinal_ex(ctx, o.baseAddress, &length) == 1
            }
        }
        precondition(ok && length == 32, "HMAC-SHA-256 failed")
        return out
    }
}
