import CGPGME
import Glibc

/// Bytes in and out of one GPGME operation through its data callbacks (issue 60): `input`
/// gives what GnuPG reads (nil: the end), `output` takes what it writes, each piece by piece,
/// so neither side is ever held whole nor written to a file. The first error either throws
/// ends the operation (the callback answers EIO) and is kept in ``failure`` for the caller,
/// which must throw it rather than GPGME's own error.
///
/// GPGME keeps the callbacks' address and this object's for the data objects' life (the whole
/// operation): both are owned here, and the data objects are released in `deinit`, before the
/// callbacks they point to.
final class GPGMEPipe {
    private let input: (() throws -> [UInt8]?)?
    private let output: (([UInt8]) throws -> Void)?
    private var pending: [UInt8] = []
    private var offset = 0
    /// The first error `input` or `output` threw.
    private(set) var failure: (any Error)?

    private let callbacks: UnsafeMutablePointer<gpgme_data_cbs>
    /// What GnuPG reads (nil without `input`).
    private(set) var readable: gpgme_data_t?
    /// What GnuPG writes (nil without `output`).
    private(set) var writable: gpgme_data_t?

    struct Unavailable: Error {}

    init(input: (() throws -> [UInt8]?)?, output: (([UInt8]) throws -> Void)?) throws(Unavailable) {
        self.input = input
        self.output = output
        callbacks = .allocate(capacity: 2)
        callbacks.initialize(to: gpgme_data_cbs(read: Self.read, write: nil, seek: nil, release: nil))
        (callbacks + 1).initialize(to: gpgme_data_cbs(read: nil, write: Self.write, seek: nil, release: nil))
        let handle = Unmanaged.passUnretained(self).toOpaque()
        if input != nil {
            guard gpgme_err_code(gpgme_data_new_from_cbs(&readable, callbacks, handle)) == GPG_ERR_NO_ERROR,
                readable != nil
            else { throw Unavailable() }
        }
        if output != nil {
            guard gpgme_err_code(gpgme_data_new_from_cbs(&writable, callbacks + 1, handle)) == GPG_ERR_NO_ERROR,
                writable != nil
            else { throw Unavailable() }
        }
    }

    deinit {
        if let readable { gpgme_data_release(readable) }
        if let writable { gpgme_data_release(writable) }
        callbacks.deinitialize(count: 2)
        callbacks.deallocate()
    }

    private static let read: gpgme_data_read_cb_t = { handle, buffer, size in
        guard let handle, let buffer else { return -1 }
        let pipe = Unmanaged<GPGMEPipe>.fromOpaque(handle).takeUnretainedValue()
        guard let input = pipe.input, pipe.failure == nil else {
            errno = EIO
            return -1
        }
        do {
            while pipe.offset == pipe.pending.count {
                guard let more = try input() else { return 0 }
                (pipe.pending, pipe.offset) = (more, 0)
            }
        } catch {
            pipe.failure = error
            errno = EIO
            return -1
        }
        let count = min(size, pipe.pending.count - pipe.offset)
        pipe.pending.withUnsafeBytes { source in
            buffer.copyMemory(from: source.baseAddress! + pipe.offset, byteCount: count)
        }
        pipe.offset += count
        return count
    }

    private static let write: gpgme_data_write_cb_t = { handle, buffer, size in
        guard let handle, let buffer else { return -1 }
        let pipe = Unmanaged<GPGMEPipe>.fromOpaque(handle).takeUnretainedValue()
        guard let output = pipe.output, pipe.failure == nil else {
            errno = EIO
            return -1
        }
        do { try output(Array(UnsafeRawBufferPointer(start: buffer, count: size))) } catch {
            pipe.failure = error
            errno = EIO
            return -1
        }
        return size
    }
}
