import CloakCore
import CloakHTTP
import CloakVault
import Dispatch

/// One form submission with files (issue 47), read from the request's body stream as it arrives.
///
/// Each file is sealed in chunks on the request's loop (``FileUpload``) and written by the vault
/// as it goes, at most ``queueLimit`` bytes of sealed chunks waiting: while they wait, the body
/// is not read, so a fast client is held back by TCP and a slow store bounds the memory, not the
/// other way round. A file over its field's size, or one file too many, is refused at once; so is
/// one whose first KiB shows an executable or a type its field does not allow, and one with an
/// executable's header anywhere past its start: nothing of a file is stored before its first KiB
/// is judged (issue 55, item 2), and a file whose whole content fits there is judged whole
/// first. When the body has ended and every chunk is stored, the whole submission is validated
/// (the text fields as for JSON, the files by ``FileFieldState``); only then are the files
/// finished into records. A refused or broken submission keeps nothing: its uploads' chunks are
/// deleted at once (``VaultClient/dropUpload(uploadID:)``).
///
/// The upload was admitted before its body is read (``UploadTicket``: its size charged to the
/// client's upload buckets, a share of the node's upload memory held until it is answered).
///
/// Touched only on the request's loop: the body stream's pieces and the vault client's
/// completions both arrive there.
final class FormUpload: @unchecked Sendable {
    /// Sealed bytes that may wait for the vault before the body is read further.
    static let queueLimit = 1 << 20

    /// A file whose body part has ended.
    struct Received {
        let field: Int
        let uploadID: String
        /// Its size, type and verdict, without the bytes it read (``FileInspection/finished()``).
        let inspection: FileInspection
        let fingerprint: [UInt8]
        let chunkCount: Int
        let fileName: String?
    }

    /// A file being read.
    struct Reading {
        let field: Int
        let upload: FileUpload
        var fileName: String?
        /// Whether its start went to the vault (its first KiB was judged, or it ended smaller).
        var stored = false
    }

    typealias Write = FormUploadState.Write

    /// Asks for the body's next piece (``BodyStream/next(_:)``, or a whole body's one).
    typealias Pull = @Sendable (@escaping @Sendable (BodyStream.Piece) -> Void) -> Void

    let nextPiece: Pull
    var reader: FormUploadReader
    let form: FormSchema
    let vault: VaultClient
    let caller: AliasCaller
    let today: CalendarDate
    let answer: FormTokenizeHandler.Answer
    let onOutcome: @Sendable (FileOutcome) -> Void
    var finish: Reply.Finish?
    let ticket: UploadTicket?
    /// Body bytes read so far (charged to the ticket as they pass what was declared).
    var bodyBytes = 0
    /// The flow between the body and the vault (the queue, one write at a time, the body's end).
    var state = FormUploadState(limit: FormUpload.queueLimit)
    var reading: Reading?
    var received: [Received] = []

    /// What became of an upload, for metrics and the audit line.
    enum FileOutcome: Sendable {
        case stored(alias: String, bytes: Int)
        case refused
        case failed
    }

    init(
        next: @escaping Pull, reader: FormUploadReader, vault: VaultClient, caller: AliasCaller,
        today: CalendarDate, answer: FormTokenizeHandler.Answer, ticket: UploadTicket? = nil,
        onOutcome: @escaping @Sendable (FileOutcome) -> Void
    ) {
        self.ticket = ticket
        self.nextPiece = next
        self.reader = reader
        self.form = reader.form
        self.vault = vault
        self.caller = caller
        self.today = today
        self.answer = answer
        self.onOutcome = onOutcome
        self.loop = vault.loop
    }

    /// Reads the body and answers through `finish`, once.
    func start(_ finish: Reply.Finish) {
        self.finish = finish
        onThread { self.carry(self.state.start()) }
    }

    /// Where every step runs: the request's loop (the body's pieces and the vault's completions
    /// arrive there already); in process, without a loop, a serial queue of this upload's own.
    let loop: LoopHandle?
    let serial = DispatchQueue(label: "cloak.form-upload")

    func onThread(_ work: @escaping @Sendable () -> Void) {
        if let loop { loop.execute(work) } else { serial.async(execute: work) }
    }

    // MARK: Reading

    func pull() {
        nextPiece { piece in self.onThread { self.received(piece) } }
    }

    /// Does what the state says: a write for the vault, the body's next piece, the end.
    func carry(_ steps: FormUploadState.Steps) {
        if let write = steps.write { store(write) }
        if steps.pull { pull() }
        if steps.complete { complete() }
    }

    func received(_ piece: BodyStream.Piece) {
        guard !state.isDone else { return }
        switch piece {
        case .bytes(let bytes):
            do {
                bodyBytes += bytes.count
                try ticket?.received(bodyBytes)
                try reader.feed(bytes) { (event) throws(CloakError) in try self.handle(event) }
            } catch {
                return fail(error)
            }
            carry(state.pieceRead())
        case .end:
            carry(state.bodyEnd())
        case .failed(let violation):
            if violation?.status == 413 {
                fail(CloakError(.payloadTooLarge, "the body is larger than the form's files allow"))
            } else {
                // The client left or stalled, or broke the framing: nothing of it is finished.
                fail(.malformed("the body could not be read whole"), outcome: .failed)
            }
        }
    }

    func handle(_ event: FormUploadReader.Event) throws(CloakError) {
        switch event {
        case .fileBegin(let field, let fileName, _):
            let rules = form.fields[field].fileRules ?? FileRules()
            let count = received.filter { $0.field == field }.count
            guard count < rules.maxFiles else {
                throw Self.refusal(
                    form.fields[field].name, [FileValidationError.tooManyFiles], rules: rules, detected: [])
            }
            let upload: FileUpload
            do { upload = try vault.newUpload() } catch { throw error.cloakError { _ in "file" } }
            // Nothing goes to the vault before the file's first KiB is judged.
            reading = Reading(field: field, upload: upload, fileName: fileName)
        case .fileBytes(let bytes):
            guard var current = reading else { return }
            let chunks: [(index: Int, sealed: [UInt8])]
            do { chunks = try current.upload.feed(bytes) } catch {
                throw VaultError.unavailable("the file could not be sealed").cloakError { _ in "file" }
            }
            let rules = form.fields[current.field].fileRules ?? FileRules()
            let refused = current.upload.inspection.refusalSoFar(rules)
            if !refused.isEmpty {
                throw Self.refusal(
                    form.fields[current.field].name, refused, rules: rules,
                    detected: current.upload.inspection.detectedType.map { [$0] } ?? [])
            }
            let bytes = chunks.reduce(0) { $0 + $1.sealed.count }
            if !current.stored, current.upload.bytes >= FileSniffer.prefixLength {
                current.stored = true
                reading = current
                state.enqueue(
                    Write(
                        start: current.upload.started, uploadID: current.upload.uploadID, chunks: chunks, bytes: bytes))
            } else if !chunks.isEmpty {
                state.enqueue(Write(start: nil, uploadID: current.upload.uploadID, chunks: chunks, bytes: bytes))
            }
        case .fileEnd(let fileName, _):
            guard let current = reading else { return }
            reading = nil
            let end:
                (last: (index: Int, sealed: [UInt8]), inspection: FileInspection, fingerprint: [UInt8], chunkCount: Int)
            do { end = try current.upload.finish() } catch {
                throw VaultError.unavailable("the file could not be sealed").cloakError { _ in "file" }
            }
            // The last chunk is written like the others; the upload is finished only at the end.
            // A file smaller than the first KiB is judged whole first: refused, it is not stored
            // (the submission's validation names it with the other fields' errors).
            if current.stored {
                state.enqueue(
                    Write(
                        start: nil, uploadID: current.upload.uploadID, chunks: [end.last],
                        bytes: end.last.sealed.count))
            } else if end.inspection.verdict(form.fields[current.field].fileRules ?? FileRules()).isEmpty {
                state.enqueue(
                    Write(
                        start: current.upload.started, uploadID: current.upload.uploadID, chunks: [end.last],
                        bytes: end.last.sealed.count))
            }
            received.append(
                Received(
                    field: current.field, uploadID: current.upload.uploadID, inspection: end.inspection.finished(),
                    fingerprint: end.fingerprint, chunkCount: end.chunkCount,
                    fileName: Self.safeName(fileName ?? current.fileName)))
        }
    }

    // MARK: Writing

    func store(_ write: Write) {
        let written: @Sendable (Result<Void, VaultError>) -> Void = { result in self.onThread { self.written(result) } }
        if let start = write.start {
            vault.startUpload(start, chunks: write.chunks, completion: written)
        } else {
            vault.storeChunks(uploadID: write.uploadID, write.chunks, completion: written)
        }
    }

    func written(_ result: Result<Void, VaultError>) {
        guard !state.isDone else { return drop(state.writeEndedAfterFinish()) }
        if case .failure(let error) = result {
            state.writeFailed()
            return fail(error.cloakError { _ in "file" })
        }
        carry(state.written())
    }

}
