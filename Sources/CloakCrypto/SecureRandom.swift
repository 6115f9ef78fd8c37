import COpenSSL

#if canImport(Glibc)
    import Glibc
#endif

/// Cryptographically secure random bytes from OpenSSL's DRBG.
///
/// Small requests are served from a buffer of the calling thread, filled by `RAND_bytes` 4 KiB
/// at a time: each `RAND_bytes` call costs about 6,700 instructions whatever its size (the
/// DRBG's lookup, lock and reseed check), and a new alias takes several (a nonce, a record id,
/// a random alias). Bytes are wiped from the buffer as they are handed out, and the rest when
/// the thread ends; a buffer is never shared between threads. Cloak never forks: a forked child
/// would hand out its parent's buffered bytes (OpenSSL's own DRBG reseeds after a fork).
package enum SecureRandom {
    package static func bytes(_ count: Int) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: count) { out, initialized in
            fill(UnsafeMutableRawBufferPointer(out))
            initialized = count
        }
    }

    /// Fills `buffer` with random bytes.
    package static func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let base = buffer.baseAddress, !buffer.isEmpty else { return }
        guard buffer.count <= ThreadPool.size / 8 else {
            // Without randomness no alias or nonce is safe to issue; stopping is the only safe answer.
            precondition(
                RAND_bytes(base.assumingMemoryBound(to: UInt8.self), Int32(buffer.count)) == 1, "RAND_bytes failed")
            return
        }
        ThreadPool.current.take(into: base, count: buffer.count)
    }

    /// A uniform integer in `0..<bound` (rejection sampling, no modulo bias).
    package static func uniform(_ bound: Int) -> Int {
        precondition(bound > 0)
        let limit = UInt64.max - UInt64.max % UInt64(bound)
        while true {
            var v: UInt64 = 0
            withUnsafeMutableBytes(of: &v) { fill($0) }
            if v < limit { return Int(v % UInt64(bound)) }
        }
    }

    /// One thread's buffer of DRBG output.
    private final class ThreadPool {
        static let size = 4096
        private let bytes = UnsafeMutablePointer<UInt8>.allocate(capacity: ThreadPool.size)
        private var used = ThreadPool.size

        deinit {
            OPENSSL_cleanse(bytes, Self.size)
            bytes.deallocate()
        }

        func take(into out: UnsafeMutableRawPointer, count: Int) {
            if used + count > Self.size {
                precondition(RAND_bytes(bytes, Int32(Self.size)) == 1, "RAND_bytes failed")
                used = 0
            }
            out.copyMemory(from: bytes + used, byteCount: count)
            OPENSSL_cleanse(bytes + used, count)
            used += count
        }

        /// The calling thread's buffer, made on first use and freed when the thread ends.
        static var current: ThreadPool {
            if let existing = pthread_getspecific(key) {
                return Unmanaged<ThreadPool>.fromOpaque(existing).takeUnretainedValue()
            }
            let pool = ThreadPool()
            let retained = Unmanaged.passRetained(pool)
            guard pthread_setspecific(key, retained.toOpaque()) == 0 else {
                retained.release()  // not kept: this draw uses it once, the next makes another
                return pool
            }
            return pool
        }

        private static let key: pthread_key_t = {
            var key = pthread_key_t()
            let rc = pthread_key_create(&key) { pointer in
                guard let pointer else { return }
                Unmanaged<ThreadPool>.fromOpaque(pointer).release()
            }
            precondition(rc == 0, "pthread_key_create failed")
            return key
        }()
    }
}
