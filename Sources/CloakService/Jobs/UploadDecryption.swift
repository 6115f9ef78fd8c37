import CloakCore
import CloakCrypto
import CloakVault
import Dispatch
import Foundation
import Synchronization

/// An OpenPGP-encrypted import body (`POST /admin/jobs/imports`, issue 60) decrypted as it
/// arrives, with the key in `jobs.gnupg_home`, on a thread of its own (GnuPG's calls block):
/// the ciphertext goes to GnuPG a piece at a time, each asked of the request's loop only when
/// GnuPG wants more (a fast client is held back by TCP), and the plaintext is read and sealed
/// into the job's input chunks (``JobInput``) as it comes, each stored before more is read.
/// Nothing is imported before GnuPG has checked the whole message: the job is queued only
/// after that (by ``JobUpload``), and a message altered, cut short, without integrity
/// protection or for another key leaves the job failed with its input deleted.
///
/// Compressed messages are bounded by their plaintext too (`jobs.max_input_mib`): a small
/// message that inflates past it is refused as it grows.
final class UploadDecryption: Sendable {
    /// Encrypted bodies a node decrypts at once (each a thread and a GnuPG process); one more
    /// is refused (429) until one ends.
    static let maxAtOnce = 4
    private static let running = Atomic<Int>(0)

    /// What the thread hands the loop when GnuPG has checked the whole message: the rows
    /// read, or why nothing may be imported.
    typealias Done = @Sendable (Result<Int64, any Error>) -> Void

    private struct Pieces {
        var queue: [[UInt8]] = []
        var ended = false
        var broken = false
        /// A piece was asked of the loop and has not come: never two at once.
        var asked = false
    }

    private let pieces = Mutex(Pieces())
    private let arrived = DispatchSemaphore(value: 0)

    private init() {}

    /// The ciphertext broke off (the body could not be read whole): the thread stops.
    struct BodyBroken: Error {}

    /// Starts decrypting, unless ``maxAtOnce`` bodies are decrypted already (nil).
    ///
    /// - Parameters:
    ///   - want: asks the loop for the body's next piece, handed back with ``give(_:)``.
    ///   - store: stores sealed input chunks; called on the thread, which waits for it.
    ///   - done: called once, on the thread, when the decryption has ended either way.
    static func start(
        home: String, input: JobInput, first: [UInt8], maxPlaintextBytes: Int,
        want: @escaping @Sendable () -> Void,
        store: @escaping @Sendable ([(index: Int, sealed: [UInt8])]) throws -> Void,
        done: @escaping Done
    ) -> UploadDecryption? {
        guard
            running.wrappingAdd(1, ordering: .acquiringAndReleasing).newValue <= maxAtOnce
        else {
            running.wrappingSubtract(1, ordering: .acquiringAndReleasing)
            return nil
        }
        let decryption = UploadDecryption()
        decryption.pieces.withLock { $0.queue.append(first) }
        let box = SendableInput(input)
        let thread = Thread {
            // Job work: a loop answering a request takes the core first.
            ThreadNiceness.lower()
            defer { running.wrappingSubtract(1, ordering: .acquiringAndReleasing) }
            var input = box.input
            do {
                try OpenPGPDecryption(home: home).decrypt(
                    input: { try decryption.next(want: want) },
                    output: { plaintext in
                        guard input.bytes + plaintext.count <= maxPlaintextBytes else {
                            throw CloakError(
                                .payloadTooLarge, "the file's plaintext is larger than jobs.max_input_mib allows")
                        }
                        try store(try input.feed(plaintext))
                    })
                // Checked whole by GnuPG: the last chunk may go, and the job be queued.
                try store([try input.finish()])
                done(.success(input.rows))
            } catch {
                done(.failure(error))
            }
        }
        thread.name = "cloak-jobs-decrypt"
        thread.start()
        return decryption
    }

    /// On the loop: the body's next piece, as asked.
    func give(_ bytes: [UInt8]) {
        pieces.withLock {
            $0.queue.append(bytes)
            $0.asked = false
        }
        arrived.signal()
    }

    /// On the loop: the body ended (`broken`: it could not be read whole).
    func end(broken: Bool) {
        pieces.withLock {
            $0.ended = true
            $0.broken = $0.broken || broken
            $0.asked = false
        }
        arrived.signal()
    }

    /// On the thread: the next piece of ciphertext, nil at the body's end.
    private func next(want: @Sendable () -> Void) throws -> [UInt8]? {
        while true {
            let (piece, ended, broken, ask) = pieces.withLock { p -> ([UInt8]?, Bool, Bool, Bool) in
                if p.broken { return (nil, true, true, false) }
                if !p.queue.isEmpty { return (p.queue.removeFirst(), false, false, false) }
                if p.ended { return (nil, true, false, false) }
                let ask = !p.asked
                p.asked = true
                return (nil, false, false, ask)
            }
            if broken { throw BodyBroken() }
            if let piece { return piece }
            if ended { return nil }
            if ask { want() }
            arrived.wait()
        }
    }

    /// `JobInput` handed to the thread once, and touched only there from then on.
    private struct SendableInput: @unchecked Sendable {
        let input: JobInput
        init(_ input: JobInput) { self.input = input }
    }
}
