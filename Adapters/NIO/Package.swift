// swift-tools-version:6.0
import PackageDescription

// The SwiftNIO adapter is a package of its own (issue 12 item 5): programs that use only RunLoopCore, or only the
// Foundation adapter, build the root package and never fetch or compile SwiftNIO. It depends on the root package
// by path, so both always build from the same checkout.
let package = Package(
    name: "rlctl-nio",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "RunLoopNIO", targets: ["RunLoopNIO"]),
        .executable(name: "nio-http-server", targets: ["nio-http-server"]),
        .executable(name: "nio-http-server-untraced", targets: ["nio-http-server-untraced"]),
    ],
    dependencies: [
        // Named: a path dependency is otherwise known by its folder's name, which differs between checkouts.
        .package(name: "rlctl", path: "../.."),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.5.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.1.0"),
    ],
    targets: [
        // The per-thread state of a traced event loop (its id, the sink it was announced to): a C thread-local,
        // because a tick must reach it without a lock or an allocation and Swift has no thread-local storage.
        .target(name: "CRunLoopNIO"),
        .target(
            name: "RunLoopNIO",
            dependencies: [
                "CRunLoopNIO",
                .product(name: "RunLoopCore", package: "rlctl"),
                .product(name: "Tracing", package: "rlctl"),
                .product(name: "RunLoopMetrics", package: "rlctl"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        // The example HTTP server (options, handler, serving), shared by the traced server and its untraced twin.
        .target(
            name: "NIOHTTPExample",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            path: "Examples/NIOHTTPExample"
        ),
        // The Examples/nio-http-server: SwiftPM keeps a package's targets inside its own folder, so the
        // example lives here, beside the adapter it demonstrates.
        .executableTarget(
            name: "nio-http-server",
            dependencies: [
                "RunLoopNIO", "NIOHTTPExample", .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "RunLoopMetrics", package: "rlctl"), .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            path: "Examples/nio-http-server"
        ),
        // The same server without the adapter: the baseline when measuring the adapter's cost under wrk
        // (wrk -t2 -c32 -d4s http://127.0.0.1:PORT/ against each, release builds).
        .executableTarget(
            name: "nio-http-server-untraced",
            dependencies: ["NIOHTTPExample", .product(name: "NIOPosix", package: "swift-nio")],
            path: "Benchmarks/nio-http-server-untraced"
        ),
        // The adapter's own cost per request (ChannelHandler on an EmbeddedChannel, with and without it): the
        // figure wrk-bench.sh's rounds are too noisy to resolve. Run by Benchmarks/event-cost-bench.sh.
        .executableTarget(
            name: "nio-io-bench",
            dependencies: [
                "RunLoopNIO",
                .product(name: "RunLoopCore", package: "rlctl"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ],
            path: "Benchmarks/nio-io-bench"
        ),
        .testTarget(
            name: "RunLoopNIOTests",
            dependencies: [
                "RunLoopNIO", "CRunLoopNIO", "nio-http-server",
                .product(name: "RunLoopCore", package: "rlctl"),
                .product(name: "Tracing", package: "rlctl"),
                .product(name: "TraceReading", package: "rlctl"),
                .product(name: "Analysis", package: "rlctl"),
                .product(name: "TestSupport", package: "rlctl"),
                .product(name: "RunLoopMetrics", package: "rlctl"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
    ]
)
