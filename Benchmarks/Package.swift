// swift-tools-version:6.0
import PackageDescription

import class Foundation.FileManager
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

// tracebench's C baseline calls the main package's `runloop` tracepoints itself, so it must be compiled with
// LTTng exactly when the main package's CRunLoopTracepoints is. This repeats that manifest's decision (same
// environment variable, same header and library), which keeps the two in step without exporting a target.
func lttngInstalledAndEnabled() -> Bool {
    let environment = ProcessInfo.processInfo.environment
    if let value = environment["RLCTL_DISABLE_LTTNG"]?.lowercased(), !["", "0", "false", "no", "off"].contains(value) {
        return false
    }
    let fileManager = FileManager.default
    func directories(_ bases: [String]) -> [String] {
        bases.flatMap { base in
            [base] + ((try? fileManager.contentsOfDirectory(atPath: base)) ?? [])
                .filter { $0.contains("-linux-") }.sorted().map { base + "/" + $0 }
        }
    }
    let header = directories(["/usr/include", "/usr/local/include"])
        .contains { fileManager.fileExists(atPath: $0 + "/lttng/tracepoint.h") }
    let library = directories(["/usr/lib", "/usr/lib64", "/usr/local/lib", "/lib"]).contains { directory in
        ["so", "a"].contains { fileManager.fileExists(atPath: "\(directory)/liblttng-ust.\($0)") }
    }
    return header && library
}

var dependencies: [Package.Dependency] = [
    // The repository root, i.e. RunLoopCore as it is checked out here.
    .package(name: "rlctl", path: "../"),
    .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
    .package(url: "https://github.com/apple/swift-metrics", from: "2.5.0"),
    .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.1.0"),
]
var benchmarkDependencies: [Target.Dependency] = [
    "CBenchSupport",
    .product(name: "RunLoopCore", package: "rlctl"),
    .product(name: "NIOCore", package: "swift-nio"),
    .product(name: "NIOPosix", package: "swift-nio"),
    .product(name: "ArgumentParser", package: "swift-argument-parser"),
]
var metricsBenchmarkDependencies: [Target.Dependency] = [
    .product(name: "RunLoopCore", package: "rlctl"),
    .product(name: "RunLoopMetrics", package: "rlctl"),
    .product(name: "CoreMetrics", package: "swift-metrics"),
    .product(name: "Prometheus", package: "swift-prometheus"),
    .product(name: "Tracing", package: "rlctl"),
]
if countMallocs {
    dependencies.append(.package(url: "https://github.com/ordo-one/malloc-interposer", from: "1.6.1"))
    benchmarkDependencies.append(.product(name: "MallocInterposerSwift", package: "malloc-interposer"))
    metricsBenchmarkDependencies.append(.product(name: "MallocInterposerSwift", package: "malloc-interposer"))
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
                "CTraceBaseline",
                .product(name: "RunLoopCore", package: "rlctl"),
                .product(name: "Tracing", package: "rlctl"),
                .product(name: "TraceReading", package: "rlctl"),
            ]
        ),
        // What watching for stalls costs a loop per iteration, per tracer.
        .executableTarget(
            name: "stallbench",
            dependencies: [
                .product(name: "RunLoopCore", package: "rlctl"),
                .product(name: "Tracing", package: "rlctl"),
            ]
        ),
        // What RunLoopMetrics costs a loop per iteration, with no backend and with swift-prometheus.
        .executableTarget(name: "metricsbench", dependencies: metricsBenchmarkDependencies),
        // A loop that emits runloop events at a chosen rate: the load of relay-fleet-bench.sh.
        .executableTarget(
            name: "eventpump",
            dependencies: [
                .product(name: "RunLoopCore", package: "rlctl"),
                .product(name: "Tracing", package: "rlctl"),
            ]
        ),
        // tracebench's C baseline: the `runloop` tracepoints called from C, with call sites of its own and the
        // probes of the provider library LTTngSink loads (LTTNG_UST_TRACEPOINT_PROBE_DYNAMIC_LINKAGE: it dlopens
        // liblttng-ust-tracepoint, hence libdl). Its header search path to the provider
        // (Sources/CRunLoopTracepoints/include in the main package) comes with the Tracing product.
        .target(
            name: "CTraceBaseline",
            dependencies: [.product(name: "Tracing", package: "rlctl")],
            cSettings: lttngInstalledAndEnabled() ? [.define("RLCTL_HAVE_LTTNG")] : [],
            linkerSettings: lttngInstalledAndEnabled() ? [.linkedLibrary("dl")] : []
        ),
        // What the Foundation adapter costs a Foundation RunLoop per iteration.
        .executableTarget(
            name: "foundationbench",
            dependencies: [
                .product(name: "RunLoopCore", package: "rlctl"),
                .product(name: "RunLoopFoundation", package: "rlctl"),
                .product(name: "Tracing", package: "rlctl"),
            ]
        ),
        // timerfd, eventfd, epoll and RUSAGE_THREAD for the raw floors and the idle measurement.
        .target(name: "CBenchSupport"),
        .executableTarget(name: "rlbench", dependencies: benchmarkDependencies),
    ]
)
