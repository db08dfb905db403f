// swift-tools-version:6.0
import PackageDescription

import class Foundation.ProcessInfo

// Benchmarks for RunLoopCore, kept in a package of their own so that SwiftNIO and the malloc interposer never
// become dependencies of RunLoopCore. From the repository root:
//
//   swift run -c release --package-path Benchmarks rlbench [--quick]
//
// The malloc interposer replaces malloc for the whole benchmark process (it counts allocations for the
// "allocations" benchmark, and adds a few nanoseconds to every malloc of every peer). Build with
// RLBENCH_NO_MALLOC_COUNTER=1 to leave it out; the allocations benchmark then reports nothing.
let countMallocs = ProcessInfo.processInfo.environment["RLBENCH_NO_MALLOC_COUNTER"] == nil

var dependencies: [Package.Dependency] = [
    // The repository root, i.e. RunLoopCore as it is checked out here.
    .package(name: "rlctl", path: "../"),
    .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
]
var benchmarkDependencies: [Target.Dependency] = [
    "CBenchSupport",
    .product(name: "RunLoopCore", package: "rlctl"),
    .product(name: "NIOCore", package: "swift-nio"),
    .product(name: "NIOPosix", package: "swift-nio"),
    .product(name: "ArgumentParser", package: "swift-argument-parser"),
]
if countMallocs {
    dependencies.append(.package(url: "https://github.com/ordo-one/malloc-interposer", from: "1.6.1"))
    benchmarkDependencies.append(.product(name: "MallocInterposerSwift", package: "malloc-interposer"))
}

let package = Package(
    name: "RunLoopCoreBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: dependencies,
    targets: [
        // Tracing's cost per event and trace-reading throughput.
        .executableTarget(
            name: "tracebench",
            dependencies: [
                .product(name: "RunLoopCore", package: "rlctl"),
                .product(name: "Tracing", package: "rlctl"),
            ]
        ),
        // timerfd, eventfd, epoll and RUSAGE_THREAD for the raw floors and the idle measurement.
        .target(name: "CBenchSupport"),
        .executableTarget(name: "rlbench", dependencies: benchmarkDependencies),
    ]
)
