import CloakCore

/// A validated submission split into what the vault aliases and what goes out as it is.
///
/// Shared by tokenization (`/tokens`, `/aliases`: the SDK's flat result) and sending (`/send`,
/// routes: the mapped body). Fields with `tokenization` always become aliases; a field with
/// serializers counts per component; fields that were not sent, and empty values, are left out.
package struct FormSubmission: Sendable {
    package enum Source: Sendable {
        /// The alias of `requests[i]`.
        case alias(Int)
        case raw(Sensitive<String>)
    }

    /// One alias request per tokenized value.
    package private(set) var requests: [AliasRequest] = []
    /// Every output entry in form order: its key (field or component name) and where its value comes from.
    package private(set) var entries: [(key: String, source: Source)] = []

    /// - Parameter keepSensitiveRaw: true for sending (the SDK's `sendData` sends every field),
    ///   false for tokenizing (card numbers and CVCs without tokenization are dropped).
    package init(_ validation: FormValidation, keepSensitiveRaw: Bool) {
        // A file field's aliases come from its upload (``FormUpload``), never from text.
        for field in validation.fields where field.isPresent && field.schema.type != .file {
            let components = field.outputComponents.filter { !$0.value.isEmpty }
            if let settings = field.schema.tokenization {
                // A submission's aliased values form a group (issue 76), a card's security code
                // never among them, whether typed as one or only named like one.
                let securityCode = field.schema.type == .cvc || SecurityCodeName.matches(field.schema.name)
                for c in components {
                    entries.append((c.key, .alias(requests.count)))
                    var request = AliasRequest(
                        value: c.value, format: settings.format, storage: settings.storage,
                        classifiers: [Self.classifier(form: validation.form.name)], luhnValid: settings.luhnValid)
                    request.groupField = securityCode || SecurityCodeName.matches(c.key) ? nil : c.key
                    requests.append(request)
                }
            } else if keepSensitiveRaw || !field.schema.type.isSensitive {
                entries += components.map { ($0.key, .raw(Sensitive($0.value))) }
            }
        }
    }

    /// The classifier a record stored through form `name` carries (its submissions, and `cloak
    /// import --form`): an export selects a form's records by it (issue 60). A record stored
    /// first elsewhere keeps the classifiers it was stored with.
    package static func classifier(form name: String) -> String { formPrefix + name }

    /// The form a record was stored through, read from its classifiers (nil: none).
    package static func form(ofClassifiers classifiers: [String]) -> String? {
        classifiers.first { $0.hasPrefix(formPrefix) }.map { String($0.dropFirst(formPrefix.count)) }
    }

    private static let formPrefix = "form:"

    /// The entry key of each alias request, for error messages ("field card_data.card_number: …").
    package func key(ofRequest index: Int) -> String {
        entries.first { if case let .alias(i) = $0.source { return i == index } else { return false } }?.key
            ?? "data[\(index)]"
    }

    /// Every entry with its final value; entries whose alias is missing are left out.
    package func resolved(_ records: [RevealedRecord]) -> [(key: String, value: String)] {
        entries.compactMap { entry in
            switch entry.source {
            case let .raw(value): return (entry.key, value.value)
            case let .alias(i):
                guard i < records.count,
                    let alias = records[i].aliases.first(where: {
                        $0.matches(requests[i].format, luhnValid: requests[i].luhnValid)
                    })
                else { return nil }
                return (entry.key, alias.alias)
            }
        }
    }
}
