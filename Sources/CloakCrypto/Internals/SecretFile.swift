import Foundation

/// Files holding key material (the vault key file, the egress CA key): created with their mode
/// from the start (never readable by others, not even for a moment), never replacing a file by
/// accident, written whole, and durable (the file and its directory entry are synced, so after a
/// power loss the keys are there, or the old file is). Read only when group and others have no
/// access to them, as ssh reads a private key.
enum SecretFile {
    enum Failure: Error, Equatable {
        /// The file exists and `replace` was false.
        case exists
        case cannotCreate
        case cannotWrite
        case cannotReplace
    }

    /// Why a secret file was not read.
    enum ReadFailure: Error, Equatable {
        /// Missing, or not ours to open.
        case cannotOpen
        case notARegularFile
        /// Group or others have some access to it (`mode & 0o077 != 0`); `mode` is its
        /// permission bits.
        case looseMode(mode_t)
        case cannotRead

        /// What went wrong with `path`, and for a loose mode the command that fixes it:
        /// `data/keys.json is readable by group or others (mode 0644); run chmod 600 data/keys.json`.
        func message(path: String) -> String {
            switch self {
            case .cannotOpen, .cannotRead: return "cannot read \(path)"
            case .notARegularFile: return "\(path) is not a regular file"
            case let .looseMode(mode):
                let access = mode & 0o044 != 0 ? "readable" : mode & 0o022 != 0 ? "writable" : "accessible"
                let octal = String(mode & 0o7777, radix: 8)
                let shown = String(repeating: "0", count: max(0, 4 - octal.count)) + octal
                return
                    "\(path) is \(access) by group or others (mode \(shown)); run chmod 600 \(SecretFile.shellQuoted(path))"
            }
        }
    }

    /// Reads the whole file at `path`, refusing one that group or others may read, write or run
    /// (`mode & 0o077 != 0`). The mode is taken from the opened descriptor (`fstat`), so the file
    /// checked is the file read, whatever is renamed meanwhile.
    static func read(_ path: String) throws(ReadFailure) -> [UInt8] {
        try read(path) { mode throws(ReadFailure) in
            guard mode & 0o077 == 0 else { throw .looseMode(mode & 0o7777) }
        }
    }

    /// Reads the whole file at `path` once `check` accepts its permission bits (taken from the
    /// opened descriptor). At most `limit` bytes: a longer file is `cannotRead`.
    static func read(_ path: String, limit: Int = 16 << 20, check: (mode_t) throws(ReadFailure) -> Void)
        throws(ReadFailure) -> [UInt8]
    {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .cannotOpen }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw .cannotRead }
        guard info.st_mode & 0o170000 == 0o100000 else { throw .notARegularFile }
        try check(info.st_mode)
        guard info.st_size <= limit else { throw .cannotRead }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16_384)
        while true {
            let n = chunk.withUnsafeMutableBytes { Foundation.read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw .cannotRead
            }
            if n == 0 { return bytes }
            bytes.append(contentsOf: chunk[..<n])
            guard bytes.count <= limit else { throw .cannotRead }  // a file that grows as it is read
        }
    }

    /// `path` as a shell word: as it is when it holds only safe characters, else single-quoted.
    static func shellQuoted(_ path: String) -> String {
        let safe = path.unicodeScalars.allSatisfy {
            ($0.value >= 0x30 && $0.value <= 0x39) || ($0.value >= 0x41 && $0.value <= 0x5A)
                || ($0.value >= 0x61 && $0.value <= 0x7A)
                || "/._-+:@%".unicodeScalars.contains($0)
        }
        return safe && !path.isEmpty ? path : "'" + path.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }

    /// Writes `bytes` to a new file at `path` with `mode`, making its directory (0700) if needed.
    /// - Parameter replace: true writes a temporary file and renames it over `path` (atomic).
    static func write(_ bytes: [UInt8], to path: String, mode: mode_t, replace: Bool = false) throws(Failure) {
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty {
            try? FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true,
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
