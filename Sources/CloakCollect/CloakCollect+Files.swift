import CloakCore
import Foundation

/// The state of a form's file fields, as CloakFileField reads and changes it.
extension CloakCollect {
    // MARK: File fields (called by CloakFileField)

    func readFiles<T>(_ index: Int, _ body: ([HeldFile]) -> T) -> T {
        locked { body(held[index] ?? []) }
    }

    /// Changes a file field's files, then calls its observer (after the lock is let go).
    func editFiles(_ index: Int, _ change: (inout [HeldFile]) -> Void) {
        let notify = locked { () -> (CloakFileField, @Sendable (CloakFileField) -> Void)? in
            guard let schema, schema.form.fields.indices.contains(index), schema.form.fields[index].type == .file
            else { return nil }
            var files = held[index] ?? []
            change(&files)
            held[index] = files
            return fileFields[index].flatMap { f in fileObservers[index].map { (f, $0) } }
        }
        if let (field, observer) = notify { observer(field) }
    }

    func fileState(of index: Int) -> CloakFileFieldState? {
        locked {
            guard let schema, schema.form.fields.indices.contains(index) else { return nil }
            return fileStateLocked(index, schema)
        }
    }

    func fileObserver(of index: Int) -> (@Sendable (CloakFileField) -> Void)? { locked { fileObservers[index] } }

    func setFileObserver(_ observer: (@Sendable (CloakFileField) -> Void)?, of index: Int) {
        locked { fileObservers[index] = observer }
    }

    /// A file field's state: CloakCore's, under the field's rules from the schema.
    func fileStateLocked(_ index: Int, _ schema: BrowserSchema) -> CloakFileFieldState {
        CloakFileFieldState(
            FileFieldState(
                files: (held[index] ?? []).map(\.inspection), rules: Self.fileRules(schema.form.fields[index])))
    }

    /// The rules the schema gives a file field (it always gives some: a schema without is refused).
    static func fileRules(_ field: FieldSchema) -> FileRules {
        field.fileRules ?? FileRules(isRequired: field.isRequired)
    }

    /// The whole form validated as the server does: an edited field is sent (dirty), the others
    /// are absent.
    func validationLocked(_ schema: BrowserSchema) -> FormValidation {
        FormValidation(
            form: schema.form, values: editors.map { $0.isDirty ? $0.text : nil },
            context: ValidationContext(today: schema.today))
    }

    func stateLocked(_ index: Int, _ validation: FormValidation) -> CloakFieldState {
        let result = validation.fields[index]
        var state =
            (try? JSONDecoder().decode(CloakFieldState.self, from: Data(JSONWriter.encode(result.state))))
            ?? CloakFieldState()
        state.isFocused = focused.contains(index)
        // One last four per number while typing (Cloak Elements' rule).
        if state.isFocused, result.schema.type == .cardNumber, let model = result.cardModel,
            state.inputLength < FieldEditor.longest(model), state.last4 != nil
        {
            state.last4 = ""
        }
        if result.schema.type == .cardNumber { addCardAttributesLocked(to: &state, accept: result.schema.accept) }
        return state
    }
}
