import Foundation

/// Files holding key material (the vault key file, the egress CA key): created with their mode
/// from the start (never readable by others, not even for a moment), never replacing a file by
/// accident, written whole, and durable (the file and its directory entry are synced, so after a
/// power loss the keys are there, or the old file is).
enum SecretFile {
    enum Failure: Error, Equatable {
        /// The file exists and `replace` was false.
        case exists
        case cannotCreate
        case cannotWrite
        case cannotReplace
    }

    /// Writes `bytes` to a new file at `path` with `mode`, making its directory (0700) if needed.
    /// - Parameter replace: true writes a temporary file and renames it over `path` (atomic).
    static func write(_ bytes: [UInt8], to path: String, mode: mode_t, replace: Bool = false) throws(Failure) {
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty {
            try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                     attributes: [.posixPermissions: 0o700])
        }
        let target = replace ? path + ".tmp" : path
        if replace { unlink(target) }
        let fd = open(target, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard fd >= 0 else { throw errno == EEXIST ? .exists : .cannotCreate }
        let ok = bytes.withUnsafeBytes { raw -> Bool in
            var offset = 0
            while offset < raw.count {
                let n = Foundation.write(fd, raw.baseAddress! + offset, raw.count - offset)
                if n <= 0 { return false }
                offset += n
            }
            return fsync(fd) == 0
        }
        close(fd)
        guard ok else { throw .cannotWrite }
        if replace {
            guard rename(target, path) == 0 else { throw .cannotReplace }
        }
        let dirfd = open(directory.isEmpty ? "." : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dirfd >= 0 {
            fsync(dirfd)
            close(dirfd)
        }
    }
}
