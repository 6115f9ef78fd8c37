import Foundation
import Testing

@testable import CloakCrypto

/// Review V, item 9: an export killed mid-way leaves its GnuPG home behind; the next start
/// removes the homes of processes that are gone, and never a running process's.
struct OpenPGPHomeTests {
    @Test func homesOfGoneProcessesAreRemovedAndLiveOnesKept() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("homes-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // A process that ran and was reaped: its id names nobody now.
        let gone = Process()
        gone.executableURL = URL(fileURLWithPath: "/bin/true")
        try gone.run()
        gone.waitUntilExit()
        let names = [
            "cloak-export-gpg-\(gone.processIdentifier)-aB3dE9",  // its process is gone
            "cloak-export-gpg-\(getpid())-Zx81Qp",  // this process: running
            "cloak-export-gpg-Qw12Er",  // an older version's, touched just now
            "other-dir",
        ]
        for name in names {
            try FileManager.default.createDirectory(atPath: "\(directory)/\(name)", withIntermediateDirectories: true)
        }
        let removed = OpenPGPEncryption.removeStaleHomes(in: directory)
        #expect(removed == [names[0]])
        let left = Set(try FileManager.default.contentsOfDirectory(atPath: directory))
        #expect(left == Set(names.dropFirst()))
    }
}
