import CloakCore

/// The config fuzzer's stand-in for `FormSchema+AliasCoverage.swift`, which asks CloakVault (not
/// built into this target) whether a format serves each length: here it checks nothing.
extension FormSchema {
    func checkAliasCoverage(at path: String, openTokenize: Bool, _ r: ConfigReader) {}
}
