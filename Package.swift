// swift-tools-version: 6.0
import PackageDescription

// One concept per target; data flows one way: config → extension window → policy → (queue → transfer → delivery).
// Engine owns that flow; Service (the daemon) and bahost (the command line) sit above it and reach it only through
// Engine's API. Extensions never share a Swift type with the host: only the C ABI in SDK/C crosses.
let package = Package(
    name: "bahost",
    products: [
        .executable(name: "bahost", targets: ["bahost"]),
        .executable(name: "bahost-extension-runner", targets: ["ExtensionRunner"]),
        // What extension authors link: Apple's API, and the harness that asserts budgets in their tests.
        .library(name: "BackgroundAssets", targets: ["BackgroundAssets"]),
        .library(name: "BackgroundAssetsTesting", targets: ["BackgroundAssetsTesting"]),
        // StoreKit's StoreDownloaderExtension alone, so that an Apple-hosted app's extension compiles unchanged.
        .library(name: "StoreKit", targets: ["StoreKit"]),
        // The app's side in C (SDK/C/include/ba/app.h): libbackgroundassets.so, for apps in any language.
        .library(name: "backgroundassets", type: .dynamic, targets: ["BackgroundAssetsC"]),
        // The example extension, built as the .so that `bahost run --plugin` loads.
        .library(name: "ExampleExtension", type: .dynamic, targets: ["ExampleExtension"]),
        // The managed example extension (ManagedDownloaderExtension), for an app with BAHasManagedAssetPacks.
        .library(name: "ManagedExampleExtension", type: .dynamic, targets: ["ManagedExampleExtension"]),
        // An Apple-hosted app's extension (StoreKit's StoreDownloaderExtension), served by the self-hosted flow.
        .library(name: "StoreHostedExampleExtension", type: .dynamic, targets: ["StoreHostedExampleExtension"]),
        // A Swift extension the tests use: exclusive-control handlers from completion callbacks.
        .library(name: "ExclusiveHandlersProbe", type: .dynamic, targets: ["ExclusiveHandlersProbe"]),
        // The example app, which talks to `bahost daemon` through the same SDK.
        .executable(name: "levels-app", targets: ["ExampleApp"]),
        // The managed example app, which uses AssetPackManager.
        .executable(name: "packs-app", targets: ["ManagedApp"]),
        .executable(name: "bahost-bench-app", targets: ["BenchApp"]),
        // The durable floor of many small files on bahost's own libraries (Benchmarks/run.sh).
        .executable(name: "bahost-library-floor", targets: ["LibraryFloor"]),
        // Every parser of another party's bytes as a fuzz target (Fuzz/run.sh); built normally, a replay tool.
        .executable(name: "bahost-fuzz", targets: ["FuzzEntry"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.0.0"),
        // 2.100: the HTTP decoder's limits on a response's head (CVE-2026-28980: before, a server could send headers
        // without end and the host kept them all).
        .package(url: "https://github.com/apple/swift-nio", from: "2.100.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.29.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-system", from: "1.4.0"),
        // Base64 without Foundation: an asset pack's userInfo on the wire, in a module the app library links.
        .package(url: "https://github.com/swift-extras/swift-extras-base64", from: "1.2.0"),
        // The person's settings file (TOML, by toml++ inside): the service and the command line read and write it.
        .package(url: "https://github.com/LebJe/TOMLKit", from: "0.6.0"),
        // `swift package generate-documentation`: the SDK's DocC (scripts/docs.sh). A plugin: nothing links it.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.4.0"),
    ],
    targets: [
        // The SDK: the C ABI (headers only; the .c file pins the struct layout) and Apple's Swift API over it.
        .target(name: "CBAExtension", path: "SDK/C"),
        .target(
            name: "BackgroundAssets",
            dependencies: [
                "AppClient", "CBAExtension", "ServiceWire", "Vocabulary",
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            path: "SDK/Swift/BackgroundAssets"),
        .target(name: "StoreKit", dependencies: ["BackgroundAssets"], path: "SDK/Swift/StoreKit"),
        // The app's side of the service's protocol, once for every binding: the Swift SDK's managers and the C library
        // call it. Without Foundation, which the app library must not carry (docs/PERFORMANCE.md).
        .target(name: "AppClient", dependencies: ["CBAExtension", "ServiceWire", "Vocabulary"], path: "SDK/Swift/AppClient"),
        // ba/app.h implemented over AppClient, as the Swift SDK is: one implementation of the service's protocol, and
        // no Foundation in the library (7 MB where it was 60). `-z nodelete`: a host's dlclose (LuaJIT's at
        // lua_close) leaves it loaded, since the Swift runtime it brings cannot be unmapped under the threads it
        // started (the connection's reader, the callbacks' thread).
        .target(
            name: "BackgroundAssetsC", dependencies: ["AppClient", "CBAExtension", "ServiceWire", "Vocabulary"],
            path: "SDK/Swift/CLibrary",
            linkerSettings: [
                .unsafeFlags([
                    "-Xlinker", "--version-script=SDK/C/libbackgroundassets.map", "-Xlinker", "-soname=libbackgroundassets.so.1",
                    "-Xlinker", "-z", "-Xlinker", "nodelete",
                ])
            ]),
        // The value types every layer shares (a download, an error, a content request, window limits, the data
        // root's layout). It depends on nothing but the ABI's header, so that no layer needs one above it for a type.
        // Without Foundation, as every module the app library links: Foundation on Linux brings ICU's data, tens of
        // megabytes in every game that ships the library.
        .target(
            name: "Vocabulary",
            dependencies: ["CBAExtension", .product(name: "ExtrasBase64", package: "swift-extras-base64")]),
        // The host's shared values that need Foundation (dates, file URLs, UUIDs, URL components): the data root's
        // layout, an app's schedule, a process's stamp. Apart from Vocabulary so that the app library carries none.
        .target(name: "HostVocabulary", dependencies: ["CHostSupport", "Vocabulary"]),
        // The person's say over background downloads: the settings file, and the rules it makes (values, no I/O).
        .target(
            name: "PersonSettings",
            dependencies: ["HostVocabulary", "Vocabulary", .product(name: "TOMLKit", package: "TOMLKit")]),
        // The messages between the service and its clients (apps, the command line), shared by both sides.
        .target(name: "ServiceWire", dependencies: ["Vocabulary"]),

        // The window's child process and the messages it exchanges with the host.
        .target(name: "ExtensionWire", dependencies: ["CBAExtension"]),
        // The runner is C, so it links with nothing of Swift's, whose loading was much of a window's activation
        // (docs/PERFORMANCE.md). swiftc links every executable, adding its start-up object and libswiftCore, or with
        // -static-stdlib (which --static-swift-stdlib passes) a list that names libstdc++ and libm before any
        // --as-needed could apply. As Embedded Swift, swiftc adds none of them; -no-static-stdlib overrides the
        // release build's flag. Without -export-dynamic, the runner's own functions stay unexported, so an
        // extension's functions of the same names never resolve to them.
        .executableTarget(
            name: "ExtensionRunner", dependencies: ["ExtensionWire"],
            linkerSettings: [
                .linkedLibrary("ffi"),
                .unsafeFlags(["-no-static-stdlib", "-enable-experimental-feature", "Embedded"]),
            ]),

        // The host, by concept.
        .target(name: "CHostSupport"),
        .target(name: "AppConfig"),
        // Managed asset packs: the author's manifest, the archive (libarchive), the download manifest.
        .systemLibrary(name: "CArchive", pkgConfig: "libarchive", providers: [.apt(["libarchive-dev"])]),
        .target(
            name: "Packs",
            dependencies: ["CArchive", "CHostSupport", "Vocabulary", .product(name: "Crypto", package: "swift-crypto")]),
        // Pack authoring (`bahost pack`: package, evaluate, convert, the download manifest's creation): only the
        // command line links it; the service reads and checks packs with Packs alone.
        .target(name: "PackAuthoring", dependencies: ["CArchive", "CTorrent", "Packs", "Vocabulary"]),
        // `bahost serve`: the packs' mock HTTPS server.
        .target(
            name: "PackServer",
            dependencies: [
                "PackAuthoring", "Packs", "Vocabulary", .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"), .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]),
        .target(name: "Policy", dependencies: ["HostVocabulary", "CBAExtension", "Vocabulary", "AppConfig"]),
        // The durable queue, and the names of a queued download's files (a long one's SHA-256: swift-crypto).
        .target(
            name: "Queue",
            dependencies: ["HostVocabulary", 
                "CBAExtension", "Vocabulary", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "GRDB", package: "GRDB.swift"), .product(name: "GRDBSQLite", package: "GRDB.swift"),
            ]),
        // libcurl (Debian's libcurl4-openssl-dev): the transfers' HTTP, on its multi interface.
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "CProxy", pkgConfig: "libproxy-1.0", providers: [.apt(["libproxy-dev"])]),
        // libtorrent-rasterbar (Debian's libtorrent-rasterbar-dev, C++): BitTorrent v2 among the machines of one
        // network (docs/PEERS.md), behind a C interface. The defines are its own build's (`pkg-config --cflags
        // libtorrent-rasterbar`): the layout of its headers' types depends on them.
        .target(
            name: "CTorrent",
            cxxSettings: [
                .define("TORRENT_LINKING_SHARED"), .define("BOOST_ASIO_ENABLE_CANCELIO"),
                .define("BOOST_ASIO_NO_DEPRECATED"), .define("TORRENT_USE_OPENSSL"), .define("TORRENT_USE_LIBCRYPTO"),
                .define("TORRENT_SSL_PEERS"), .define("OPENSSL_NO_SSL2"), .define("BOOST_ALL_NO_LIB"),
            ],
            linkerSettings: [.linkedLibrary("torrent-rasterbar"), .linkedLibrary("ssl"), .linkedLibrary("crypto")]),
        // libsystemd: sd-bus (the system and session buses), sd-daemon (socket activation, readiness).
        .target(name: "CSystemd", linkerSettings: [.linkedLibrary("systemd")]),
        // The system bus: NetworkManager's connectivity and metered state, logind's sleep.
        .target(name: "SystemBus", dependencies: ["CHostSupport", "CSystemd", "HostVocabulary", "Vocabulary"]),
        // The desktop, on the session bus: notifications and the dock's launcher entries.
        .target(name: "Desktop", dependencies: ["CHostSupport", "CSystemd", "HostVocabulary"]),
        // One attempt at one transfer, on libcurl's multi interface: one transfer thread owns every socket.
        .target(
            name: "Transfer",
            dependencies: [
                "CCurl", "CHostSupport", "CProxy", "HostVocabulary", "Vocabulary",
                .product(name: "Crypto", package: "swift-crypto"),
            ]),
        .target(
            name: "ExtensionRuntime",
            dependencies: ["ExtensionWire", "CBAExtension", "CHostSupport", "HostVocabulary", "Vocabulary"]),
        .target(name: "Delivery", dependencies: ["HostVocabulary", "ExtensionRuntime", "Queue", "Vocabulary"]),
        // The swarms of the files machines on one network share: libtorrent's session, on one owner thread.
        .target(name: "Peers", dependencies: ["CTorrent", "HostVocabulary"]),
        .target(
            name: "Engine",
            dependencies: ["HostVocabulary", 
                "AppConfig", "CBAExtension", "CHostSupport", "Delivery", "ExtensionRuntime", "Packs", "Peers", "Policy",
                "Queue", "Transfer", "Vocabulary",
            ]),
        // Above the engine: the service and the command line speak to it in its own values and intents
        // (`DownloadStatus`, `InstalledApp`, `LifecycleEvent`, `HostEngine.install`), never in its queue's rows, so
        // they depend on none of Queue, Transfer, Delivery or Policy.
        .target(
            name: "Service",
            dependencies: ["HostVocabulary", 
                "AppConfig", "CBAExtension", "CHostSupport", "ExtensionRuntime", "Engine", "Packs", "PersonSettings",
                "ServiceWire", "SystemBus", "CSystemd", "Desktop",
                "Vocabulary", .product(name: "Logging", package: "swift-log"),
            ]),
        .executableTarget(
            name: "bahost",
            dependencies: ["HostVocabulary", 
                "AppConfig", "BackgroundAssetsTesting", "ExtensionRuntime", "Engine", "PackAuthoring", "Packs", "PackServer",
                "PersonSettings", "Peers",
                "Service",
                "ServiceWire", "SystemBus", "Vocabulary",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]),

        .target(name: "BackgroundAssetsTesting", dependencies: ["ExtensionRuntime", "Policy", "Vocabulary"]),

        .target(name: "ExampleExtension", dependencies: ["BackgroundAssets"], path: "Plugins/Swift/ExampleExtension"),
        .target(
            name: "ManagedExampleExtension", dependencies: ["BackgroundAssets"], path: "Plugins/Swift/ManagedExtension"),
        .target(
            name: "StoreHostedExampleExtension", dependencies: ["BackgroundAssets", "StoreKit"],
            path: "Plugins/Swift/StoreHostedExtension"),
        .target(
            name: "ExclusiveHandlersProbe", dependencies: ["BackgroundAssets"],
            path: "Plugins/Swift/Probes/ExclusiveHandlers"),
        .executableTarget(
            name: "ExampleApp",
            dependencies: ["BackgroundAssets", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            path: "Plugins/Swift/ExampleApp"),
        .executableTarget(
            name: "ManagedApp",
            dependencies: [
                "BackgroundAssets", .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            path: "Plugins/Swift/ManagedApp"),
        .executableTarget(
            name: "BenchApp",
            dependencies: ["BackgroundAssets", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            path: "Benchmarks/BenchApp"),
        .executableTarget(
            name: "LibraryFloor",
            dependencies: ["CCurl", .product(name: "GRDB", package: "GRDB.swift")],
            path: "Benchmarks/LibraryFloor"),

        // Fuzzing: the targets (debug builds only: two parsers are reached with @testable) and the one program.
        .target(
            name: "FuzzTargets",
            dependencies: [
                "AppConfig", "CBAExtension", "ExtensionRuntime", "ExtensionWire", "PackAuthoring", "Packs", "Policy",
                "ServiceWire",
                "Transfer", "Vocabulary",
            ],
            path: "Fuzz/Targets"),
        .executableTarget(name: "FuzzEntry", dependencies: ["FuzzTargets"], path: "Fuzz/Entry"),

        // Tests: one target per module, then the end-to-end ones. Those that run extensions depend on the runner so
        // that it is built beside the test bundle (`swift build --build-tests` builds the example .so there too).
        .target(
            name: "TestSupport",
            dependencies: [
                "PackAuthoring", "Packs", .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            path: "Tests/TestSupport"),
        // One unit-test target per module (ModuleTests tests Module), in the order of the modules above.
        .testTarget(name: "BackgroundAssetsTests", dependencies: ["BackgroundAssets", "CBAExtension", "StoreKit"]),
        // The C app library (libbackgroundassets) through its header, against a real daemon.
        .testTarget(name: "BackgroundAssetsCTests", dependencies: ["ServiceWire", "TestSupport", "bahost", "ExtensionRunner"]),
        .testTarget(name: "VocabularyTests", dependencies: ["Vocabulary"]),
        // The modules whose own tests were only end to end: the app's side of the protocol against a scripted
        // service, StoreKit's one declaration, and the system bus's watch on a private bus.
        .testTarget(name: "AppClientTests", dependencies: ["AppClient", "ServiceWire", "Vocabulary"]),
        .testTarget(
            name: "StoreKitTests", dependencies: ["StoreKit", "BackgroundAssetsTesting", "TestSupport", "ExtensionRunner"]),
        .testTarget(name: "SystemBusTests", dependencies: ["SystemBus", "HostVocabulary", "TestSupport"]),
        .testTarget(name: "PersonSettingsTests", dependencies: ["PersonSettings", "HostVocabulary"]),
        .testTarget(name: "HostVocabularyTests", dependencies: ["HostVocabulary", "Vocabulary"]),
        .testTarget(name: "ServiceWireTests", dependencies: ["ServiceWire", "Vocabulary", "TestSupport"]),
        .testTarget(name: "AppConfigTests", dependencies: ["AppConfig"]),
        .testTarget(
            name: "PacksTests",
            dependencies: [
                "Packs", "PackAuthoring", "CArchive", "TestSupport", .product(name: "Crypto", package: "swift-crypto"),
            ]),
        .testTarget(
            name: "PackAuthoringTests",
            dependencies: ["PackAuthoring", "Packs", "TestSupport", .product(name: "Crypto", package: "swift-crypto")]),
        .testTarget(name: "PackServerTests", dependencies: ["PackServer", "Packs", "TestSupport", "Transfer"]),
        .testTarget(
            name: "PeersTests", dependencies: ["HostVocabulary", "Peers", "PackAuthoring", "Packs", "TestSupport"]),
        .testTarget(name: "PolicyTests", dependencies: ["HostVocabulary", "Policy", "Vocabulary"]),
        .testTarget(name: "QueueTests", dependencies: ["HostVocabulary", "Queue", "Vocabulary", "TestSupport"]),
        .testTarget(name: "DesktopTests", dependencies: ["Desktop"]),
        .testTarget(
            name: "TransferTests", dependencies: ["CCurl", "HostVocabulary", "Transfer", "Vocabulary", "TestSupport"]),
        .testTarget(
            name: "ExtensionRuntimeTests",
            dependencies: ["ExtensionRuntime", "Policy", "Vocabulary", "TestSupport", "ExtensionRunner"]),
        .testTarget(
            name: "DeliveryTests",
            dependencies: ["Delivery", "ExtensionRuntime", "HostVocabulary", "Queue", "Vocabulary"]),
        .testTarget(
            name: "EngineTests",
            dependencies: [
                "HostVocabulary", "Engine", "Delivery", "ExtensionRuntime", "Queue", "Transfer", "Vocabulary",
                "TestSupport", "ExtensionRunner",
            ]),
        .testTarget(
            name: "ServiceTests", dependencies: ["HostVocabulary", "Service", "ServiceWire", "Vocabulary", "TestSupport"]),
        .testTarget(
            name: "BackgroundAssetsTestingTests",
            dependencies: ["BackgroundAssetsTesting", "Vocabulary", "TestSupport", "ExtensionRunner"]),

        // End to end, named for what they run: the command line, the daemon with real apps, real networks in
        // namespaces (root: links that go down, routes that move, proxies), and the fuzz corpus replayed.
        .testTarget(name: "BahostCLITests", dependencies: ["TestSupport", "bahost", "ExtensionRunner"]),
        .testTarget(
            name: "DaemonTests",
            dependencies: [
                "ExtensionRuntime", "Packs", "PackAuthoring", "ServiceWire", "TestSupport", "bahost", "ExtensionRunner",
                "ExampleApp", "ManagedApp",
            ]),
        .testTarget(name: "NetworkTests", dependencies: ["TestSupport", "bahost", "ExtensionRunner"]),
        .testTarget(name: "FuzzRegressionTests", dependencies: ["FuzzTargets", "TestSupport"]),
    ]
)
