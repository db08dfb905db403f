// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "rlctl",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "RunLoopCore", targets: ["RunLoopCore"]),
        .library(name: "Tracing", targets: ["Tracing"]),
        .executable(name: "rlctl", targets: ["rlctl"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.1.0"),
    ],
    targets: [
        // epoll, eventfd, timerfd and the monotonic clock, for RunLoopCore/Platform only.
        .target(name: "CRunLoopLinux"),
        .target(
            name: "RunLoopCore",
            dependencies: [
                "CRunLoopLinux",
                .product(name: "DequeModule", package: "swift-collections"),
            ]
        ),
        .target(name: "Tracing", dependencies: ["RunLoopCore"]),
        .executableTarget(
            name: "rlctl",
            dependencies: [
                "RunLoopCore", "Tracing",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(name: "RunLoopCoreTests", dependencies: ["RunLoopCore"]),
        .testTarget(name: "TracingTests", dependencies: ["Tracing", "RunLoopCore"]),
    ]
)
