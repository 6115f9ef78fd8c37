// swift-tools-version:6.1
import PackageDescription

/// Cloak: a self-hosted secure-collect gateway on libevent and OpenSSL.
///
/// Dependencies point downward only:
/// `cloak → CloakService → {CloakHTTP, CloakCore}`; `CloakHTTP → {CLibevent, COpenSSL}`;
/// `CloakCore` depends on nothing but the standard library and Foundation; `CloakVault → {CSQLite, CLibPQ}`.
/// Release builds optimise across module boundaries: the hot path crosses CloakHTTP, CloakCore
/// and CloakService, and generic code (the router, the JSON writer) is otherwise called
/// unspecialised through witness tables (Benchmarks/README.md has the before and after).
///
/// SwiftPM refuses a version-tagged dependency whose targets carry unsafe flags, and apps depend
/// on this package for CloakCollect (CloakCore): checked out as a dependency (SwiftPM and Xcode
/// both clone into a `checkouts` folder), the package builds without them.
let isDependency = Context.packageDirectory.contains("/checkouts/")
let optimized: [SwiftSetting] =
    isDependency ? [] : [.unsafeFlags(["-cross-module-optimization"], .when(configuration: .release))]

let package = Package(
    name: "Cloak",
    // iOS 15: CloakCollect's floor (URLSession, NSLock, Swift concurrency back-deployed); the
    // server itself runs on Linux. Platforms are package-wide, so on macOS CloakCollect needs 14.
    platforms: [.macOS(.v14), .iOS(.v15)],
    products: [
        .executable(name: "cloak", targets: ["cloak"]),
        // The native client for apps: Foundation and CloakCore only (docs/mobile.md).
        // Static, so `swift build --product CloakCollect` builds it alone.
        .library(name: "CloakCollect", type: .static, targets: ["CloakCollect"]),
        // Its UIKit and SwiftUI views (Apple platforms only; empty elsewhere).
        .library(name: "CloakCollectUI", targets: ["CloakCollectUI"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.0.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        // Traces: the instrumentation API only. Spans are exported over OTLP/HTTP by Cloak's own
        // upstream client (CloakService/Tracing): no second event loop, HTTP stack or TLS library.
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.0"),
        // Deque: the guess limiter's time-ordered expiry queues.
        .package(url: "https://github.com/apple/swift-collections", from: "1.1.0"),
    ],
    targets: [
        .systemLibrary(name: "CLibevent", pkgConfig: "libevent", providers: [.apt(["libevent-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        // PKCS#11's header only (libp11-kit-dev); modules are loaded at run time (dlopen).
        .systemLibrary(name: "CPKCS11", providers: [.apt(["libp11-kit-dev"])]),
        // GPGME: OpenPGP-encrypted import files (issue 60), decrypted with the operator's key.
        .systemLibrary(name: "CGPGME", pkgConfig: "gpgme", providers: [.apt(["libgpgme-dev"])]),
        // The browser files CloakService serves (its Elements/Assets and Console/Assets), copied
        // into the binary by C23's #embed: seconds where `embedInCode` took 45 s of a 2-core build.
        .target(name: "CEmbeddedAssets"),

        .target(name: "CloakCore", swiftSettings: optimized),
        .target(name: "CloakCollect", dependencies: ["CloakCore"]),
        .target(name: "CloakCollectUI", dependencies: ["CloakCollect"]),
        .target(name: "CloakCrypto", dependencies: ["COpenSSL", "CPKCS11", "CGPGME"], swiftSettings: optimized),
        .target(
            name: "CloakVault", dependencies: ["CloakCore", "CloakCrypto", "CSQLite", "CLibPQ"],
            swiftSettings: optimized),
        .target(name: "CloakHTTP", dependencies: ["CloakCore", "CLibevent", "COpenSSL"], swiftSettings: optimized),
        // The jobs wing (issue 76): imports and exports as step machines and their runner, below
        // the service, which holds only their API face and hands the runner what it needs.
        .target(
            name: "CloakJobs",
            dependencies: [
                "CloakCore", "CloakCrypto", "CloakVault", "CloakHTTP",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: optimized),
        .target(
            name: "CloakService",
            dependencies: [
                "CloakCore", "CloakHTTP", "CloakVault", "CloakCrypto", "CloakJobs", "CEmbeddedAssets",
                .product(name: "Yams", package: "Yams"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "DequeModule", package: "swift-collections"),
            ],
            // Cloak Elements' browser files and the operator console's: compiled into the binary
            // by CEmbeddedAssets (ElementsAssets, ConsoleAssets), not Swift sources.
            exclude: ["Elements/Assets", "Console/Assets"],
            swiftSettings: optimized
        ),
        .executableTarget(
            name: "cloak",
            dependencies: [
                "CloakService", "CloakJobs", "CloakCrypto", "CloakVault",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: optimized
        ),

        // Micro-benchmarks of the hot paths: `swift run -c release cloak-micro` (Benchmarks/README.md).
        .executableTarget(
            name: "cloak-micro", dependencies: ["CloakCore", "CloakService", "CloakHTTP", "CloakCrypto", "CloakVault"],
            path: "Benchmarks/Micro"),
        // Fills a store with card records in-process for `Benchmarks/scale.sh` (not a `cloak` command).
        .executableTarget(
            name: "cloak-scale-fill", dependencies: ["CloakCore", "CloakService", "CloakVault"],
            path: "Benchmarks/ScaleFill", swiftSettings: optimized),

        // Test support (not a product): a raw-socket HTTP client and shared fixtures.
        .target(
            name: "CloakTesting", dependencies: ["CloakService", "CloakHTTP", "CloakCore", "CloakVault", "CloakCrypto"]),

        .testTarget(name: "CloakCoreTests", dependencies: ["CloakCore"]),
        .testTarget(
            name: "CloakCollectTests", dependencies: ["CloakCollect", "CloakCore", "CloakService", "CloakTesting"]),
        .testTarget(
            name: "CloakCryptoTests", dependencies: ["CloakCrypto", "CloakTesting"], resources: [.copy("Fixtures")]),
        .testTarget(name: "CloakVaultTests", dependencies: ["CloakVault", "CloakCrypto", "CloakCore", "CloakTesting"]),
        .testTarget(name: "CloakHTTPTests", dependencies: ["CloakHTTP", "CloakTesting"]),
        // The jobs' machines and formats, without a server, a socket or a store (issue 76).
        .testTarget(name: "CloakJobsTests", dependencies: ["CloakJobs", "CloakVault", "CloakCore"]),
        .testTarget(
            name: "CloakServiceTests",
            dependencies: [
                "CloakService", "CloakJobs", "CloakCore", "CloakHTTP", "CloakVault", "CloakCrypto", "CloakTesting",
            ]),
    ],
    swiftLanguageModes: [.v6]
)

// Upcoming language features every Swift target builds with: `any` spelled out for existentials,
// and imports that say which module a member comes from.
for target in package.targets where target.type != .system {
    target.swiftSettings =
        (target.swiftSettings ?? []) + [
            .enableUpcomingFeature("ExistentialAny"), .enableUpcomingFeature("MemberImportVisibility"),
        ]
}
