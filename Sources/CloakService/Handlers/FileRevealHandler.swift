import CloakCore
import CloakCrypto
import CloakHTTP
import CloakVault
import Synchronization

/// `GET /files/{alias}` (scope `files:reveal`): a stored file's content, opened chunk by chunk
/// as it is sent (``FileContentSource``), as an attachment that no browser renders in place or
/// caches: `Content-Disposition: attachment`, `X-Content-Type-Options: nosniff`,
/// `Cache-Control: no-store`.
struct FileRevealHandler: Sendable {
    let vault: VaultClient
    let outcome: Outcome?
    let onRevealed: @Sendable (_ bytes: Int) -> Void

    func reveal(alias: String) throws(CloakError) -> Reply {
        try VaultAPIHandler.requirePlausible(alias, outcome)
        return .later { finish in
            vault.revealGuessing([alias]) { result in
                let record: RevealedRecord
                switch result {
                case .failure(let error):
                    audit(alias, .error)
                    return finish(.error(error.cloakError { _ in "alias" }))
                case .success(let found):
                    guard let found = found[alias] else {
                        audit(alias, .notFound)
                        return finish(.error(.notFound("no such alias")))
                    }
                    record = found
                }
                guard record.classifiers.contains(Vault.fileClassifier),
                    let metadata = Vault.FileMetadata(json: record.value)
                else {
                    audit(alias, .notAFile)
                    return finish(.error(.notFound("the alias is not a file's")))
                }
                vault.file(alias: alias) { result in
                    let file: StoredFile
                    switch CloakError.fileContent(result, metadata) {
                    case let .success(found): file = found
                    case let .failure(error):
                        audit(alias, error.code == .notFound ? .notFound : .error)
                        return finish(.error(error))
                    }
                    let source: FileContentSource
                    do throws(VaultError) { source = try FileContentSource(vault: vault, file: file) } catch {
                        audit(alias, .error)
                        return finish(.error(error.cloakError { _ in "alias" }))
                    }
                    audit(alias, .ok)
                    onRevealed(metadata.bytes)
                    var response = HTTPResponse(
                        status: 200,
                        headers: [
                            ("Content-Type", metadata.mediaType.rawValue),
                            ("Content-Disposition", Self.disposition(metadata.fileName)),
                            // Content Cloak did not write: the sandbox of route answers, always.
                            ("Content-Security-Policy", SandboxMiddleware.policy),
                            ("X-Content-Type-Options", "nosniff"), ("Cache-Control", "no-store"),
                        ])
                    response.content = .stream(BodyStream { receive in source.next(receive) }, length: metadata.bytes)
                    finish(response)
                }
            }
        }
    }

    private func audit(_ alias: String, _ result: AuditResult) {
        outcome?.alias(vault.vault.auditReference(alias), result)
    }

    /// `attachment; filename="…"` with the name in printable ASCII (others become `_`), and the
    /// name as given in `filename*` (RFC 6266) when it is not all ASCII.
    static func disposition(_ name: String?) -> String {
        guard let name, !name.isEmpty else { return "attachment" }
        let ascii = String(
            String.UnicodeScalarView(
                name.unicodeScalars.map { s in
                    s.value >= 0x20 && s.value < 0x7F && s != "\"" && s != "\\" ? s : "_"
                }))
        var value = "attachment; filename=\"\(ascii)\""
        if ascii != name {
            var encoded = ""
            for byte in name.utf8 {
                let c = Character(Unicode.Scalar(byte))
                if byte < 0x80, c.isLetter || c.isNumber || "-._~".contains(c) {
                    encoded.append(c)
                } else {
                    encoded += "%" + String(byte, radix: 16, uppercase: true).leftPadded(2)
                }
            }
            value += "; filename*=UTF-8''" + encoded
        }
        return value
    }
}

/// A stored file's content as an answer's body: chunks read a few at a time and opened in
/// order; the end only once the last chunk has opened (a file cut short in the store fails, and
/// the connection closes before the promised length).
final class FileContentSource: Sendable {
    /// Chunks read from the store at once (256 KiB of sealed bytes).
    static let batch = 4

    private struct State {
        var opener: FileOpener
        var next = 0
        var ready: [[UInt8]] = []
        var ended = false
    }

    private let vault: VaultClient
    private let file: StoredFile
    private let state: Mutex<State>

    init(vault: VaultClient, file: StoredFile) throws(VaultError) {
        self.vault = vault
        self.file = file
        state = Mutex(State(opener: try vault.vault.opener(for: file)))
    }

    func next(_ receive: @escaping @Sendable (BodyStream.Piece) -> Void) {
        enum Step { case give([UInt8]), end, fail, read(Int) }
        let step: Step = state.withLock { s in
            if s.ended { return .end }
            if !s.ready.isEmpty { return .give(s.ready.removeFirst()) }
            return s.next < file.chunkCount ? .read(s.next) : .fail
        }
        switch step {
        case .give(let sealed): give(sealed, receive)
        case .end: receive(.end)
        case .fail: receive(.failed(nil))
        case .read(let from):
            vault.fileChunks(file, from: from, limit: Self.batch) { result in
                guard case .success(let chunks) = result, !chunks.isEmpty else { return receive(.failed(nil)) }
                let first: [UInt8] = self.state.withLock { s in
                    s.next += chunks.count
                    s.ready += chunks.dropFirst()
                    return chunks[0]
                }
                self.give(first, receive)
            }
        }
    }

    private func give(_ sealed: [UInt8], _ receive: @escaping @Sendable (BodyStream.Piece) -> Void) {
        let opened: [UInt8]? = state.withLock { s in
            guard let (bytes, isLast) = try? s.opener.open(sealed) else { return nil }
            if isLast {
                guard (try? s.opener.finish()) != nil else { return nil }
                s.ended = true
            }
            return bytes
        }
        guard let opened else { return receive(.failed(nil)) }
        // An empty piece (an empty last chunk) is the end itself.
        receive(opened.isEmpty ? .end : .bytes(opened))
    }
}

extension String {
    fileprivate func leftPadded(_ width: Int) -> String {
        String(repeating: "0", count: Swift.max(0, width - count)) + self
    }
}
