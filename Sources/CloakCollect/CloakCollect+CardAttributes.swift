import CloakCore
import Foundation

extension CloakCollect {
    // MARK: Card attributes (issue 48)

    /// What the server adds to a card number's state from its BIN table: the attributes of the
    /// `bin` the state shows, once the server has said them; a card the field's `accept` rule
    /// refuses gets the rule's error, and still shows its bin, last four and attributes (the
    /// page can say why), as `FieldProcessor` does on the server.
    func addCardAttributesLocked(to state: inout CloakFieldState, accept: CardAcceptRule?) {
        guard let bin = state.bin, !bin.isEmpty, let answer = binAnswers[bin], let attributes = answer else { return }
        state.cardAttributes = attributes
        if let accept, !accept.accepts(attributes) {
            state.validationErrors.append(accept.error)
            state.isValid = false
        }
    }

    /// The bin the card field `index` shows, when the server has not said its attributes and is
    /// not being asked (it is then marked as asked); nil otherwise, and when no bin shows.
    func binToAskLocked(_ index: Int, _ schema: BrowserSchema) -> String? {
        guard let bin = stateLocked(index, validationLocked(schema)).bin, Self.isShownBin(bin),
            binAnswers.index(forKey: bin) == nil, !binsAsked.contains(bin)
        else { return nil }
        binsAsked.insert(bin)
        return bin
    }

    /// Whether `bin` is one the server looks up: 6 or 8 digits (a card number's state shows no
    /// other, but for a card field whose own rules take fewer digits).
    static func isShownBin(_ bin: String) -> Bool {
        (bin.utf8.count == 6 || bin.utf8.count == 8)
            && bin.utf8.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }

    /// Asks the server for the attributes of `bin` (`GET /elements/v1/bins/{bin}`: the digits the
    /// state shows, never more), off the caller's thread.
    func askCardAttributes(of bin: String) {
        let url: URL
        do {
            url = try endpoint("/elements/v1/bins/\(bin)")
        } catch {
            locked { _ = binsAsked.remove(bin) }
            return
        }
        let transport = self.transport
        Task { [weak self] in
            let answer = try? await transport.send(CloakHTTPRequest(method: "GET", url: url))
            self?.answered(bin, answer)
        }
    }

    /// Keeps what the server said of `bin`, then calls the observers of the card fields whose
    /// state shows that bin still and gains attributes (an answer for a bin no field shows any
    /// more changes no state: it is kept for when one shows it again).
    func answered(_ bin: String, _ answer: CloakResponse?) {
        let notify = locked { () -> [(CloakField, @Sendable (CloakField) -> Void)] in
            binsAsked.remove(bin)
            // Nothing to keep: the bin is asked again after a later edit.
            guard let said = Self.cardAttributes(in: answer) else { return [] }
            binAnswers.updateValue(said, forKey: bin)
            guard said != nil, let schema else { return [] }
            let cards = schema.form.fields.indices.filter { i in
                schema.form.fields[i].type == .cardNumber && editors.indices.contains(i) && fields[i] != nil
                    && observers[i] != nil
            }
            guard !cards.isEmpty else { return [] }
            let validation = validationLocked(schema)
            return cards.compactMap { (i: Int) -> (CloakField, @Sendable (CloakField) -> Void)? in
                guard stateLocked(i, validation).bin == bin, let field = fields[i], let observer = observers[i] else {
                    return nil
                }
                return (field, observer)
            }
        }
        for (field, observer) in notify { observer(field) }
    }

    /// What an answer of `GET /elements/v1/bins/{bin}` says to keep: the attributes, or `.some(nil)`
    /// when the server knows none (`{"cardAttributes": null}`; or a refusal other than 429, such as
    /// a server without the endpoint); nil when there is nothing to keep (no answer, 429, 5xx, a
    /// body that does not read).
    static func cardAttributes(in answer: CloakResponse?) -> CardAttributes?? {
        guard let answer else { return nil }
        guard answer.status == 200 else {
            // A refusal (but 429) will not change by asking again.
            if (400..<500).contains(answer.status), answer.status != 429 { return .some(nil) }
            return nil
        }
        guard let document = try? JSONParser().parse(Array(answer.body)) else { return nil }
        switch document["cardAttributes"] {
        case .null?:
            return .some(nil)
        case let value?:
            guard let attributes = CardAttributes(json: value) else { return nil }
            return .some(attributes)
        case nil:
            return nil
        }
    }
}
