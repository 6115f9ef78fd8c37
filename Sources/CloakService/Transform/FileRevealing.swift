import CloakCore
import CloakHTTP
import CloakVault
import Foundation
import Synchronization

/// A route's file reveals (issue 47), the last step before a request goes upstream: each file
/// alias the route's `reveal: {multipart: […]}` or `reveal: {json: […], encoding: base64}`
/// selects is replaced by its file, streamed out of the vault as the request is sent
/// (``RevealedBody``), never whole in memory.
///
/// - `multipart`: a text part with a selected name holds an alias; it becomes a file part of the
///   same name, with the file's name and media type from its metadata. The body is written again
///   with a boundary of Cloak's own (the file's bytes were never checked against the client's).
/// - `json` with `encoding: base64`: a selected string holds an alias; it becomes the file's
///   content in base64.
///
/// An alias that is not a file's is 404 (1404): nothing is sent.
struct FileRevealing: Sendable {
    let vault: VaultClient
    let operations: [Route.Operation]
    /// Told of each file revealed (metrics and the audit line: the alias goes to its keyed
    /// reference there, never to a log as it is).
    let onRevealed: @Sendable (_ alias: String, _ bytes: Int) -> Void

    /// What a route's file reveal records: the `file_reveal` audit line (the route, the token,
    /// the client and the alias's keyed reference) and the metrics.
    static func recording(
        route: String, tokenID: String, client: String, vault: Vault, log: AuditLog,
        metrics: @escaping @Sendable (Int) -> Void
    ) -> @Sendable (String, Int) -> Void {
        { alias, bytes in
            metrics(bytes)
            log.record(
                AuditEvent.Draft(
                    made: .fileReveal, tokenID: tokenID, client: client,
                    aliasReference: vault.auditReference(alias), result: .ok,
                    facts: [("route", route), ("bytes", String(bytes))]))
        }
    }

    /// A piece of the body before the files are looked up.
    enum Planned: Sendable {
        case bytes([UInt8])
        /// A multipart file part: its name, the alias of its file, and whether it is the first part.
        case part(name: String, alias: String, first: Bool)
        /// A file in base64, where a JSON string was (its quotes stay in the bytes around).
        case base64(alias: String)
    }

    /// What the body becomes: its pieces and, for multipart, the new `Content-Type`.
    struct Plan: Sendable {
        var pieces: [Planned]
        var contentType: String?
        /// Writes the heads of a multipart body's file parts.
        var writer: MultipartWriter?
        var aliases: [String] {
            var seen = Set<String>()
            return pieces.compactMap { piece -> String? in
                switch piece {
                case .bytes: return nil
                case .part(_, let alias, _), .base64(let alias): return seen.insert(alias).inserted ? alias : nil
                }
            }
        }
    }

    /// Finds the selected aliases in `body` (JSON or multipart, by `contentType`).
    static func plan(_ body: [UInt8], contentType: String?, operations: [Route.Operation]) throws(CloakError) -> Plan {
        let multipartNames = Set(operations.flatMap(\.multipart))
        let paths = operations.filter { $0.encoding == .base64 }.flatMap(\.json)
        if !multipartNames.isEmpty, let type = contentType, let boundary = MultipartParser.boundary(contentType: type) {
            return try planMultipart(body, boundary: boundary, names: multipartNames)
        }
        guard !paths.isEmpty, let selection = try JSONSelection.select(paths, in: body) else {
            return Plan(pieces: [.bytes(body)])
        }
        // Each alias becomes a marker no JSON text holds, found again in the written body.
        var random = SystemRandomNumberGenerator()
        let tag = "cloak-file-" + String(random.next(), radix: 36) + String(random.next(), radix: 36) + "-"
        let rewritten = selection.rewrite(selection.matches.indices.map { tag + String($0) })
        var pieces: [Planned] = []
        var rest = rewritten[...]
        let marker = Array(tag.utf8)
        while let start = rest.firstRange(of: marker) {
            pieces.append(.bytes(Array(rest[..<start.lowerBound])))
            var end = start.upperBound
            while end < rest.endIndex, rest[end] >= UInt8(ascii: "0"), rest[end] <= UInt8(ascii: "9") { end += 1 }
            guard let index = Int(String(decoding: rest[start.upperBound..<end], as: UTF8.self)),
                index < selection.matches.count
            else { throw .malformed("the JSON body could not be rewritten") }
            pieces.append(.base64(alias: selection.matches[index].text.value))
            rest = rest[end...]
        }
        pieces.append(.bytes(Array(rest)))
        return Plan(pieces: pieces)
    }

    private static func planMultipart(_ body: [UInt8], boundary: [UInt8], names: Set<String>) throws(CloakError)
        -> Plan
    {
        var parser = MultipartParser(boundary: boundary)
        var parts: [(head: MultipartParser.PartHead, bytes: [UInt8])] = []
        var offset = 0
        while true {
            let (consumed, event) = body.withUnsafeBytes {
                parser.parse(UnsafeRawBufferPointer(rebasing: $0[offset...]))
            }
            let base = offset
            offset += consumed
            switch event {
            case .needMore:
                guard consumed > 0 else {
                    if let violation = parser.finish() { throw .malformed("multipart: \(violation)") }
                    return finishPlan(parts, names: names)
                }
            case .partBegun(let head): parts.append((head, []))
            case .bytes(let range):
                parts[parts.count - 1].bytes += body[(base + range.lowerBound)..<(base + range.upperBound)]
            case .partEnded, .end: continue
            case .violation(let violation): throw .malformed("multipart: \(violation)")
            }
        }
    }

    private static func finishPlan(_ parts: [(head: MultipartParser.PartHead, bytes: [UInt8])], names: Set<String>)
        -> Plan
    {
        var random = SystemRandomNumberGenerator()
        let writer = MultipartWriter(
            boundary: "----cloak" + (0..<4).map { _ in String(random.next(), radix: 36) }.joined())!
        var pieces: [Planned] = []
        var pending: [UInt8] = []
        for (i, part) in parts.enumerated() {
            if names.contains(part.head.name), part.head.fileName == nil,
                let alias = String(validating: part.bytes, as: UTF8.self)
            {
                if !pending.isEmpty { pieces.append(.bytes(pending)) }
                pending = []
                // The part's head needs the file's metadata: written once it is known.
                pieces.append(.part(name: part.head.name, alias: alias, first: i == 0))
                continue
            }
            pending += writer.head(
                first: i == 0, name: part.head.name, fileName: part.head.fileName, contentType: part.head.contentType)
            pending += part.bytes
        }
        pending += writer.closing(afterParts: !parts.isEmpty)
        pieces.append(.bytes(pending))
        return Plan(pieces: pieces, contentType: writer.contentType, writer: writer)
    }
}

extension FileRevealing {
    /// Looks up the plan's files (each alias must be a file's) and answers the body to send,
    /// streamed, with its length.
    func resolve(
        _ plan: Plan, completion: @escaping @Sendable (Result<(body: BodyStream, length: Int), CloakError>) -> Void
    ) {
        let aliases = plan.aliases
        vault.revealGuessing(aliases) { result in
            let found: [String: RevealedRecord]
            switch result {
            case .failure(let error): return completion(.failure(error.cloakError { _ in "file alias" }))
            case .success(let records): found = records
            }
            var metadata: [String: Vault.FileMetadata] = [:]
            for alias in aliases {
                guard let record = found[alias], record.classifiers.contains(Vault.fileClassifier),
                    let file = Vault.FileMetadata(json: record.value)
                else { return completion(.failure(.notFound("a selected alias is not a file's"))) }
                metadata[alias] = file
            }
            let known = metadata
            lookUp(aliases[...], metadata: known, files: [:]) { found in
                let metadata = known
                let files: [String: StoredFile]
                switch found {
                case let .success(all): files = all
                case let .failure(error): return completion(.failure(error))
                }
                var segments: [RevealedBody.Segment] = []
                var length = 0
                for piece in plan.pieces {
                    switch piece {
                    case .bytes(let bytes):
                        segments.append(.bytes(bytes))
                        length += bytes.count
                    case .part(let name, let alias, let first):
                        let file = metadata[alias]!
                        let head = plan.writer!.head(
                            first: first, name: name, fileName: file.fileName ?? name,
                            contentType: file.mediaType.rawValue)
                        segments += [.bytes(head), .file(files[alias]!, base64: false)]
                        length += head.count + file.bytes
                    case .base64(let alias):
                        segments.append(.file(files[alias]!, base64: true))
                        length += (metadata[alias]!.bytes + 2) / 3 * 4
                    }
                }
                for alias in aliases { onRevealed(alias, metadata[alias]!.bytes) }
                let body = RevealedBody(vault: vault, segments: segments)
                completion(.success((BodyStream { receive in body.next(receive) }, length)))
            }
        }
    }

    /// Each alias's stored file, one after the other (or why one cannot be served).
    private func lookUp(
        _ aliases: ArraySlice<String>, metadata: [String: Vault.FileMetadata], files: [String: StoredFile],
        then: @escaping @Sendable (Result<[String: StoredFile], CloakError>) -> Void
    ) {
        guard let alias = aliases.first else { return then(.success(files)) }
        vault.file(alias: alias) { result in
            let file: StoredFile
            switch CloakError.fileContent(result, metadata[alias]!) {
            case let .success(found): file = found
            case let .failure(error): return then(.failure(error))
            }
            var files = files
            files[alias] = file
            lookUp(aliases.dropFirst(), metadata: metadata, files: files, then: then)
        }
    }
}
