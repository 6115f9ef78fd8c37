import CloakCore

/// The console's files, compiled into the binary (`Console/Assets`, SwiftPM `embedInCode`), as
/// Elements' are: one page, its script and its style. No build step and no third-party code.
enum ConsoleAssets {
    typealias Asset = ElementsAssets.Asset

    /// By the name they are served under: `/console/<name>` (the page is `/console/`).
    static let byName: [String: Asset] = [
        "console.js": Asset(.script, PackageResources.console_js),
        "console.css": Asset(.style, PackageResources.console_css),
        "favicon.svg": Asset(.image, PackageResources.favicon_svg),
    ]

    static let page = Asset(.document, PackageResources.console_html)
}
