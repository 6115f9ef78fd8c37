import CloakCore
import Foundation

extension CloakCollect {
    // MARK: Submitting

    /// Posts the form (the VGS collect body: `{"fields": {name: text}, "extraData", "options"}`,
    /// edited fields only) to its endpoint. A form whose file fields hold files is posted as
    /// `multipart/form-data` instead, with `Cloak-Upload: 1`: each edited text field a part named
    /// by the field, each file a file part named by its field (repeated for several files),
    /// `extraData` a JSON part of that name, the mapping policy a JSON part named `options`
    /// (`{"fieldNameMappingPolicy": …}`). Nothing is refused here: every HTTP answer resolves, a
    /// 422 included (a file the field's rules refuse: 1001); only no answer throws (`no_answer`).
    /// - Parameters:
    ///   - extraData: merged into the outgoing JSON by the server (a JSON object's members).
    ///   - mappingPolicy: how field names shape the outgoing JSON (the form's own by default).
    ///   - progress: told how much of the body has gone out (from the transport: a transport of
    ///     your own reports once, at the end, unless it implements `send(_:progress:)`).
    public func submit(
        _ kind: CloakSubmission, extraData: [String: any Sendable]? = nil, mappingPolicy: CloakMappingPolicy? = nil,
        progress: (@Sendable (CloakUploadProgress) -> Void)? = nil
    ) async throws -> CloakResponse {
        let outgoing = try locked { () throws(CloakCollectError) -> Outgoing in
            guard let schema else {
                throw CloakCollectError(code: "schema_not_loaded", message: "call loadSchema() before submitting")
            }
            var outgoing = Outgoing(headers: self.headers)
            for (i, field) in schema.form.fields.enumerated() {
                if field.type == .file {
                    if let files = held[i], !files.isEmpty { outgoing.files.append((name: field.name, files: files)) }
                } else if editors[i].isDirty {
                    outgoing.texts.append((name: field.name, text: editors[i].text))
                }
            }
            return outgoing
        }
        if let extraData {
            guard JSONSerialization.isValidJSONObject(extraData) else {
                throw CloakCollectError(code: "invalid_extra_data", message: "extraData must be a JSON object")
            }
        }
        let url = try endpoint(try kind.path(form: Self.pathComponent(form)))
        var request: CloakHTTPRequest
        if outgoing.files.isEmpty {
            var values: [String: String] = [:]
            for (name, text) in outgoing.texts { values[name] = text }
            var body: [String: Any] = ["fields": values]
            if let extraData { body["extraData"] = extraData }
            if let mappingPolicy { body["options"] = ["fieldNameMappingPolicy": mappingPolicy.rawValue] }
            request = CloakHTTPRequest(
                method: "POST", url: url, headers: outgoing.headers,
                body: try JSONSerialization.data(withJSONObject: body))
            request.headers["Content-Type"] = "application/json"
        } else {
            let multipart = try Self.multipart(outgoing, extraData: extraData, mappingPolicy: mappingPolicy)
            request = CloakHTTPRequest(method: "POST", url: url, headers: outgoing.headers, body: multipart.body)
            request.headers["Content-Type"] = multipart.contentType
            // What a plain HTML form cannot send: Cloak takes an upload without a token only with it.
            request.headers["Cloak-Upload"] = "1"
        }
        if let progress { return try await transport.send(request, progress: progress) }
        return try await transport.send(request)
    }

    /// What a submission sends, read under the lock: the edited text fields and the file fields
    /// holding files, in the form's order.
    struct Outgoing {
        var texts: [(name: String, text: String)] = []
        var files: [(name: String, files: [HeldFile])] = []
        var headers: [String: String]
    }

    /// The `multipart/form-data` body of a submission: text parts, file parts, then `extraData`
    /// and `options` (JSON), under a random boundary none of the parts holds.
    static func multipart(
        _ outgoing: Outgoing, extraData: [String: any Sendable]?, mappingPolicy: CloakMappingPolicy?
    ) throws -> (contentType: String, body: Data) {
        var parts: [(name: String, fileName: String?, contentType: String?, bytes: Data)] = []
        for (name, text) in outgoing.texts {
            parts.append((name: name, fileName: nil, contentType: nil, bytes: Data(text.utf8)))
        }
        for (name, files) in outgoing.files {
            for file in files {
                // The declared type is a hint only (Cloak judges the content).
                let hint = file.info.declaredMediaType ?? file.info.mediaType ?? "application/octet-stream"
                parts.append((name: name, fileName: file.info.fileName, contentType: hint, bytes: file.data.value))
            }
        }
        if let extraData {
            let json = try JSONSerialization.data(withJSONObject: extraData)
            parts.append((name: "extraData", fileName: nil, contentType: "application/json", bytes: json))
        }
        if let mappingPolicy {
            let options = try JSONSerialization.data(withJSONObject: ["fieldNameMappingPolicy": mappingPolicy.rawValue])
            parts.append((name: "options", fileName: nil, contentType: "application/json", bytes: options))
        }
        var chosen: MultipartWriter?
        for _ in 0..<4 where chosen == nil {
            let boundary = "CloakCollect-" + UUID().uuidString.replacingOccurrences(of: "-", with: "")
            let delimiter = Data("--\(boundary)".utf8)
            if parts.allSatisfy({ $0.bytes.range(of: delimiter) == nil }) {
                chosen = MultipartWriter(boundary: boundary)
            }
        }
        guard var writer = chosen else {
            throw CloakCollectError(code: "invalid_body", message: "no multipart boundary could be chosen")
        }
        var body = Data()
        for part in parts {
            let head = writer.begin(name: part.name, fileName: part.fileName, contentType: part.contentType)
            body.append(contentsOf: head)
            body.append(part.bytes)
        }
        body.append(contentsOf: writer.finish())
        return (writer.contentType, body)
    }
}
