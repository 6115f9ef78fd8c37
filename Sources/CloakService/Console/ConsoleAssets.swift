import CloakCore

/// The console's files, compiled into the binary (`Console/Assets`, through `EmbeddedAssets`),
/// as Elements' are: one page, its script and its style. No build step and no third-party code.
enum ConsoleAssets {
    typealias Asset = ElementsAssets.Asset

    /// By the name they are served under: `/console/<name>` (the page is `/console/`, not here).
    static let byName: [String: Asset] = EmbeddedAssets.console().filter { $0.key != pageName }

    static let page = EmbeddedAssets.console()[pageName]!

    private static let pageName = "console.html"
}
