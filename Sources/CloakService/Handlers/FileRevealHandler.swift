import CloakCore
import CloakCrypto
import CloakHTTP
import CloakVault
import Synchronization

/// `GET /files/{alias}` (scope `files:reveal`): a stored file's content, opened chunk by chunk
/// as it is sent (``SealedChunkSource``), as an attachment that no browser renders in place or
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
                    let source: SealedChunkSource
                    do throws(VaultError) { source = try SealedChunkSource.file(file, vault: vault) } catch {
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

extension String {
    fileprivate func leftPadded(_ width: Int) -> String {
        String(repeating: "0", count: Swift.max(0, width - count)) + self
    }
}
