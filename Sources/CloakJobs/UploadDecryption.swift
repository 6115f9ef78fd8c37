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
package final class UploadDecryption: Sendable {
    /// Encrypted bodies a node decrypts at once (each a thread and a GnuPG process), and one
    /// token at a time: one more is refused (429) until one ends, so a token sending slowly
    /// cannot hold every slot.
    package static let maxAtOnce = 4
    private static let running = Mutex<(total: Int, owners: Set<String>)>((0, []))

    /// Why a decryption may not start now.
    package enum Busy: Error {
        case node
        case owner
    }

    /// What the thread hands the loop when GnuPG has checked the whole message: the rows
    /// read, or why nothing may be imported.
    package typealias Done = @Sendable (Result<Int64, any Error>) -> Void

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
    package struct BodyBroken: Error {}

    /// The ciphertext did not all come within the time allowed: the thread stops.
    package struct TooSlow: Error {}

    /// Starts decrypting `owner`'s body, unless ``maxAtOnce`` bodies, or one of `owner`'s, are
    /// decrypted already (``Busy``).
    ///
    /// - Parameters:
    ///   - seconds: the most the whole body may take to arrive (`jobs`' receiving limit).
    ///   - want: asks the loop for the body's next piece, handed back with ``give(_:)``.
    ///   - store: stores sealed input chunks; called on the thread, which waits for it.
    ///   - done: called once, on the thread, when the decryption has ended either way (its
    ///     slot is free by then).
    package static func start(
        owner: String, home: String, input: JobInput, first: [UInt8], maxPlaintextBytes: Int, seconds: Int,
        want: @escaping @Sendable () -> Void,
        store: @escaping @Sendable ([(index: Int, sealed: [UInt8])]) throws -> Void,
        done: @escaping Done
    ) throws(Busy) -> UploadDecryption {
        let refusal = running.withLock { r -> Busy? in
            if r.total >= maxAtOnce { return .node }
            if r.owners.contains(owner) { return .owner }
            r.total += 1
            r.owners.insert(owner)
            return nil
        }
        if let refusal { throw refusal }
        let decryption = UploadDecryption()
        decryption.pieces.withLock { $0.queue.append(first) }
        let box = SendableInput(input)
        let deadline = DispatchTime.now() + .seconds(seconds)
        let thread = Thread {
            // Job work: a loop answering a request takes the core first.
            ThreadNiceness.lower()
            var input = box.input
            // Both of GPGME's callbacks run here, on this thread, one after the other.
            var inflation = InflationBound()
            let result: Result<Int64, any Error>
            do {
                try OpenPGPDecryption(home: home).decrypt(
                    input: {
                        let piece = try decryption.next(want: want, deadline: deadline)
                        inflation.read(piece?.count ?? 0)
                        return piece
                    },
                    output: { plaintext in
                        guard input.bytes + plaintext.count <= maxPlaintextBytes else {
                            throw CloakError(
                                .payloadTooLarge, "the file's plaintext is larger than jobs.max_input_mib allows")
                        }
                        try inflation.wrote(plaintext.count)
                        // GnuPG hands over a few KiB at a time: the store is asked only for
                        // whole chunks.
                        let chunks = try input.feed(plaintext)
                        if !chunks.isEmpty { try store(chunks) }
                    })
                // Checked whole by GnuPG: the last chunk may go, and the job be queued.
                try store([try input.finish()])
                result = .success(input.rows)
            } catch {
                result = .failure(error)
            }
            // The slot is free before the answer goes: a client told may send again at once.
            running.withLock {
                $0.total -= 1
                $0.owners.remove(owner)
            }
            done(result)
        }
        thread.name = "cloak-jobs-decrypt"
        thread.start()
        return decryption
    }

    /// On the loop: the body's next piece, as asked.
    package func give(_ bytes: [UInt8]) {
        pieces.withLock {
            $0.queue.append(bytes)
            $0.asked = false
        }
        arrived.signal()
    }

    /// On the loop: the body ended (`broken`: it could not be read whole).
    package func end(broken: Bool) {
        pieces.withLock {
            $0.ended = true
            $0.broken = $0.broken || broken
            $0.asked = false
        }
        arrived.signal()
    }

    /// On the thread: the next piece of ciphertext, nil at the body's end.
    private func next(want: @Sendable () -> Void, deadline: DispatchTime) throws -> [UInt8]? {
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
            if arrived.wait(timeout: deadline) == .timedOut { throw TooSlow() }
        }
    }

    /// `JobInput` handed to the thread once, and touched only there from then on.
    private struct SendableInput: @unchecked Sendable {
        let input: JobInput
        init(_ input: JobInput) { self.input = input }
    }
}
