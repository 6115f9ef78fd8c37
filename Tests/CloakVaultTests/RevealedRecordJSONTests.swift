import CloakCore
import Testing

@testable import CloakVault

/// The Vault API writes records straight into its answer; the bytes must be those of the
/// record's JSON document, escapes and all.
@Suite struct RevealedRecordJSONTests {
    @Test(arguments: [
        ("4111 1111 1111 1111", 2, ["pci"]), ("", 0, []), ("a\"b\\c\n\u{1}é", 1, ["x\"y", "z"]),
        ("123-45-6789", 3, ["", "ssn"]),
    ])
    func writtenAnswerIsTheDocumentsBytes(value: String, aliasCount: Int, classifiers: [String]) {
        let formats: [AliasFormatName] = [.UUID, .FPE_SIX_T_FOUR, .NUM_LENGTH_PRESERVING]
        let aliases = (0..<aliasCount).map { IssuedAlias(alias: "tok_\($0)\"\\", format: formats[$0 % formats.count]) }
        let record = RevealedRecord(
            value: value, aliases: aliases, storage: .volatile, classifiers: classifiers,
            createdAt: 1_700_000_000)
        var writer = JSONWriter()
        writer.beginArray()
        writer.nextElement()
        record.write(into: &writer)
        writer.nextElement()
        record.write(into: &writer)
        writer.endArray()
        #expect(writer.bytes == JSONWriter.encode(.array([record.json, record.json])))
    }
}
