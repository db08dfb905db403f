// swift-tools-version:6.0
import Foundation
import PackageDescription

// ===== optional system libraries (docs/lttng.md) =====
// LTTng-UST (the `runloop` tracepoint provider) and libbabeltrace2 (the CTF reader) are used when their
// development files are installed, and left out otherwise: the C targets then build stubs, and `swift build`
// and `swift test` still work. RLCTL_DISABLE_LTTNG=1 / RLCTL_DISABLE_BABELTRACE2=1 force them out.
let buildEnvironment = ProcessInfo.processInfo.environment

func optionDisabled(_ name: String) -> Bool {
    guard let value = buildEnvironment[name]?.lowercased() else { return false }
    return !["", "0", "false", "no", "off"].contains(value)
}

/// Directories to look in: the usual prefixes and their Debian multiarch subfolders (x86_64-linux-gnu, …).
func systemDirectories(_ bases: [String]) -> [String] {
    var directories: [String] = []
    for base in bases {
        directories.append(base)
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: base)) ?? []
        directories += entries.filter { $0.contains("-linux-") }.sorted().map { base + "/" + $0 }
    }
    return directories
}

/// Whether a C library is installed for building: its header and its linkable lib<name>.so or .a.
func systemLibraryInstalled(header: String, library: String) -> Bool {
    let includes = systemDirectories(["/usr/include", "/usr/local/include"])
    let libraries = systemDirectories(["/usr/lib", "/usr/lib64", "/usr/local/lib", "/lib"])
    let fileManager = FileManager.default
    return includes.contains { fileManager.fileExists(atPath: $0 + "/" + header) }
        && libraries.contains { directory in
            ["so", "a"].contains { fileManager.fileExists(atPath: "\(directory)/lib\(library).\($0)") }
        }
}

let haveLTTng = !optionDisabled("RLCTL_DISABLE_LTTNG")
    && systemLibraryInstalled(header: "lttng/tracepoint.h", library: "lttng-ust")
// libbpf (the kernel view: KernelTracing's BPF probe, loaded with libbpf at run time; docs in
// Sources/CKernelProbe/rl_kernel_probe.c). RLCTL_DISABLE_LIBBPF=1 forces it out.
let haveLibbpf = !optionDisabled("RLCTL_DISABLE_LIBBPF")
    && systemLibraryInstalled(header: "bpf/libbpf.h", library: "bpf")
let haveBabeltrace2 = !optionDisabled("RLCTL_DISABLE_BABELTRACE2")
    && systemLibraryInstalled(header: "babeltrace2/babeltrace.h", library: "babeltrace2")

let package = Package(
    name: "rlctl",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "RunLoopCore", targets: ["RunLoopCore"]),
        .library(name: "Tracing", targets: ["Tracing"]),
        .library(name: "TraceReading", targets: ["TraceReading"]),
        .library(name: "Analysis", targets: ["Analysis"]),
        .library(name: "RunLoopFoundation", targets: ["RunLoopFoundation"]),
        .library(name: "RunLoopMetrics", targets: ["RunLoopMetrics"]),
        .executable(name: "rlctl", targets: ["rlctl"]),
        .executable(name: "runloop-demo", targets: ["runloop-demo"]),
        // For the adapters' packages (Adapters/*), whose tests share the process runner and the CI rule; not an API.
        .library(name: "TestSupport", targets: ["TestSupport"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.1.0"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.2.0"),
        .package(url: "https://github.com/jpsim/Yams", from: "5.0.1"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.5.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.1.0"),
    ],
    targets: [
        // epoll, eventfd, timerfd and the monotonic clock, for RunLoopCore/Platform only.
        .target(name: "CRunLoopLinux"),
        // The trace vocabulary and schema: activities, run results, wake reasons, item kinds, the events and
        // their fields. Shared by the loop, the tracers, the readers and the analyses; depends on the schema table.
        .target(name: "TraceModel", dependencies: ["CTraceSchema"]),
        .target(
            name: "RunLoopCore",
            dependencies: [
                "CRunLoopLinux", "TraceModel",
                .product(name: "DequeModule", package: "swift-collections"),
            ]
        ),
        // The trace schema's one definition (include/runloop_events.def) and the table expanded from it; the C
        // targets below expand the .def into their encoders, tracepoints and field lookups.
        .target(name: "CTraceSchema"),
        // The embedded recorder's lock-free per-thread buffers (the event hot path).
        .target(name: "CRecorder", dependencies: ["CTraceSchema"]),
        // The rl_trace_* functions and the loader of the `runloop` LTTng-UST provider (empty without LTTng).
        // The provider itself (provider/, linked with liblttng-ust) is not compiled into this target: the
        // LTTngProviderBuilder plugin builds it as librunloop-lttng-provider.so into this target's resources,
        // and runloop_tracepoints.c dlopens it when an LTTngSink first needs it, so processes that never trace
        // with LTTng never load liblttng-ust (docs/lttng.md, "Loading the provider").
        .target(
            name: "CRunLoopTracepoints",
            dependencies: ["CTraceSchema"],
            exclude: ["provider"],
            cSettings: haveLTTng ? [.define("RLCTL_HAVE_LTTNG")] : [],
            linkerSettings: haveLTTng ? [.linkedLibrary("dl")] : [],
            plugins: haveLTTng ? ["LTTngProviderBuilder"] : []
        ),
        .plugin(name: "LTTngProviderBuilder", capability: .buildTool()),
        // The kernel view's probe: the loader (rl_kernel_probe.c, which dlopens libbpf.so.1 when first used, so
        // nothing links libbpf) and the BPF object (bpf/), built by the KernelProbeBuilder plugin into this
        // target's resources. Without libbpf-dev the loader says why and the plugin is not applied.
        .target(
            name: "CKernelProbe",
            exclude: ["bpf"],
            cSettings: haveLibbpf ? [.define("RLCTL_HAVE_LIBBPF")] : [],
            linkerSettings: haveLibbpf ? [.linkedLibrary("dl")] : [],
            plugins: haveLibbpf ? ["KernelProbeBuilder"] : []
        ),
        .plugin(name: "KernelProbeBuilder", capability: .buildTool()),
        // The kernel view: follows threads with the probe and turns its records into the kernel_* events.
        .target(name: "KernelTracing", dependencies: ["TraceModel", "CKernelProbe"]),
        // Finds librlctl-wait-interposer.so for `rlctl record --any`. The library itself (interposer/: the wrappers
        // of the libc wait calls, with the embedded recorder compiled in) is built by the WaitInterposerBuilder
        // plugin into this target's resources; nothing of it is linked into this target.
        .target(name: "CWaitInterposer", exclude: ["interposer"], plugins: ["WaitInterposerBuilder"]),
        .plugin(name: "WaitInterposerBuilder", capability: .buildTool()),
        // The CTF reader's libbabeltrace2 graph and sink component (a stub without libbabeltrace2).
        .target(
            name: "CBabeltrace2",
            dependencies: ["CTraceSchema"],
            cSettings: haveBabeltrace2 ? [.define("RLCTL_HAVE_BABELTRACE2")] : [],
            linkerSettings: haveBabeltrace2 ? [.linkedLibrary("babeltrace2")] : []
        ),
        // Recording: the loop's events into the embedded recorder or LTTng, and LTTng sessions.
        .target(name: "Tracing", dependencies: ["RunLoopCore", "TraceModel", "CRecorder", "CRunLoopTracepoints", "CWaitInterposer"]),
        // Reading: any trace (embedded or CTF from LTTng) back into TraceModel events. Links neither the loop nor
        // liblttng-ust.
        .target(name: "TraceReading", dependencies: ["TraceModel", "CBabeltrace2"]),
        // rlctl's process plumbing: termination signals turned into calls, programs started held at a gate until
        // `rlctl record` has told LTTng to trace them.
        .target(name: "CProcess"),
        // Summaries computed from any trace (latency, timer drift, stalls, budgets), their reports, and exports.
        .target(
            name: "Analysis",
            dependencies: ["TraceReading", "TraceModel", .product(name: "Histogram", package: "hdrhistogram-swift")]
        ),
        // The CoreFoundation run-loop functions libFoundation.so exports on Linux but no Swift module declares.
        .target(name: "CFoundationRunLoop", linkerSettings: [.linkedLibrary("Foundation")]),
        // The Foundation adapter: a CFRunLoop observer that sends a Foundation RunLoop's activities to the sink.
        .target(name: "RunLoopFoundation", dependencies: ["CFoundationRunLoop", "RunLoopCore", "TraceModel", "Tracing"]),
        // A loop's metrics through swift-metrics (docs/metrics.md): on the event seam, beside any tracer; depends
        // on swift-metrics' API only, never on a backend, and nothing of RunLoopCore depends on it.
        .target(name: "RunLoopMetrics", dependencies: ["RunLoopCore", .product(name: "CoreMetrics", package: "swift-metrics")]),
        // `rlctl top --serve`: the live view's loops as Prometheus series (rendered by swift-prometheus) and the
        // small HTTP responder that serves them. Only rlctl links it; no library product pulls it in.
        .target(name: "Exporter", dependencies: ["Analysis", .product(name: "Prometheus", package: "swift-prometheus")]),
        // The workloads `rlctl run` drives: built-in presets and workload files.
        .target(name: "Workloads", dependencies: ["RunLoopCore"]),
        .executableTarget(
            name: "rlctl",
            dependencies: [
                "RunLoopCore", "Tracing", "TraceReading", "Analysis", "Workloads", "CProcess", "KernelTracing", "Exporter",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Yams", package: "Yams"),
            ]
        ),
        // An application built on RunLoopCore with the LTTng sink installed: what `rlctl record` traces.
        .executableTarget(name: "runloop-demo", dependencies: ["RunLoopCore", "Tracing"], path: "Examples/runloop-demo"),
        // A RunLoopCore program with its loop's metrics on swift-prometheus, serving the scrape from the loop itself
        // (docs/metrics.md; the test of the library against a real Prometheus runs it).
        .executableTarget(
            name: "metrics-demo",
            dependencies: ["RunLoopCore", "Tracing", "RunLoopMetrics", .product(name: "Metrics", package: "swift-metrics"),
                           .product(name: "Prometheus", package: "swift-prometheus")],
            path: "Examples/metrics-demo"
        ),
        // The README's RunLoopCore example as a program: Loop.main serving timers, sources and the main queue.
        .executableTarget(name: "main-queue-demo", dependencies: ["RunLoopCore"], path: "Examples/main-queue-demo"),
        // A Foundation RunLoop program with timers and one blocking callout, traced by the Foundation adapter.
        .executableTarget(name: "foundation-timer-app", dependencies: ["RunLoopFoundation", "TraceModel"], path: "Examples/foundation-timer-app"),
        // A process whose main thread runs Loop.main, for the tests of the real main dispatch queue (rule 38).
        .executableTarget(name: "main-queue-fixture", dependencies: ["RunLoopCore"], path: "Tests/MainQueueFixture"),
        // What the test targets share (the process runner, golden-text checks, seeded random numbers, locked
        // values, the CI rule): test code only, under Tests/, depending on no product module.
        .target(name: "CTestSupport", path: "Tests/CTestSupport"),
        .target(name: "TestSupport", dependencies: ["CTestSupport"], path: "Tests/TestSupport"),
        .testTarget(name: "TestSupportTests", dependencies: ["TestSupport"]),
        .testTarget(name: "RunLoopCoreTests", dependencies: ["RunLoopCore", "TestSupport", "main-queue-fixture", "main-queue-demo"]),
        .testTarget(
            name: "TracingTests", dependencies: ["Tracing", "TraceReading", "RunLoopCore", "TestSupport"],
            exclude: ["Fixtures"]   // read through #filePath: the compatibility traces (FixtureCompatibilityTests)
        ),
        .testTarget(name: "AnalysisTests", dependencies: ["Analysis", "TraceReading", "Tracing", "RunLoopCore", "TestSupport",
                                                            .product(name: "Histogram", package: "hdrhistogram-swift")]),
        .testTarget(name: "RunLoopMetricsTests", dependencies: ["RunLoopMetrics", "RunLoopCore", "TestSupport",
                                                                .product(name: "MetricsTestKit", package: "swift-metrics")]),
        .testTarget(name: "ExporterTests", dependencies: ["Exporter", "Analysis", "TestSupport"]),
        .testTarget(name: "RunLoopFoundationTests", dependencies: ["RunLoopFoundation", "RunLoopCore", "Tracing", "TraceReading",
                                                                   "TestSupport", "foundation-timer-app"]),
        // The wait interposer in real processes: C programs (Programs/, compiled by the tests) recorded through it.
        .testTarget(
            name: "WaitInterposerTests", dependencies: ["TraceReading", "TraceModel", "TestSupport", "CWaitInterposer"],
            exclude: ["Programs"]   // compiled with cc by the tests, found through #filePath
        ),
        // The kernel recorder on this machine's kernel (root; in CI an unavailable kernel view fails).
        .testTarget(
            name: "KernelTracingTests", dependencies: ["KernelTracing", "TraceModel", "TestSupport", "kernel-recorder-fixture"],
            exclude: ["Programs"]   // compiled with cc by the tests, found through #filePath
        ),
        // A process that records with the kernel view until KernelTracingTests kills it with SIGKILL.
        .executableTarget(name: "kernel-recorder-fixture", dependencies: ["KernelTracing"], path: "Tests/KernelRecorderFixture"),
        // End to end: runs the built rlctl binary.
        .testTarget(
            name: "rlctlTests", dependencies: ["rlctl", "runloop-demo", "metrics-demo", "TestSupport"],
            // AnyPrograms: the programs `rlctl record --any` is tested on; Fleet: the relay daemon test's hosts, as
            // network namespaces; Pages: what checks a report's screenshot. All run from #filePath.
            exclude: ["AnyPrograms", "Fleet", "Pages"]
        ),
    ]
)
