import Analysis
import Foundation
import Glibc
import Testing
import TestSupport
import TraceReading

/// A NIO server made with its metrics in one line (`nio-http-server --metrics`: `NIOLoopTracing.makeEventLoopGroup
/// (numberOfThreads:metrics:)` on swift-prometheus, served at its own /metrics), recorded by `rlctl record` with the
/// embedded tracer while `rlctl top --serve` follows the recording: one real Prometheus scrapes both, and each
/// event loop's stalls, utilization and lag, as the library exports them and as rlctl's exporter does, are checked
/// against the recording's own summary. Fails, not skips, under CI=true without Prometheus or a built rlctl.
@Suite struct PrometheusTests {
    /// The repository's rlctl, as the root package's `swift test` builds it (CI runs that before this package's).
    static let rlctl: String = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent(".build/debug/rlctl").path

    static let requirement: TestRequirement = {
        var missing: [String] = []
        if TestEnvironment.executable("prometheus") == nil { missing.append("prometheus") }
        if !FileManager.default.isExecutableFile(atPath: rlctl) { missing.append("rlctl (swift build --product rlctl in the repository)") }
        return TestRequirement(missing: missing.isEmpty ? nil : missing.joined(separator: ", "),
                               problem: "the test's Prometheus server, or the rlctl it runs, is not there")
    }()

    @Test(.enabled(if: requirement.shouldRun, requirement.skipComment))
    func prometheusHasEachLoopsStallsUtilizationAndLagAsTheRecordingsSummary() throws {
        guard Self.requirement.requireMet() else { return }
        let registry = temporaryPath("nio-live-registry"), trace = temporaryPath("nio-metrics.rltrace")
        defer { for path in [registry, trace] { try? FileManager.default.removeItem(atPath: path) } }
        // rlctl's registry of recordings the test's own, and LTTng hidden: top follows this recording alone.
        let environment: [String: String?] = ["RLCTL_LIVE_DIR": registry, "PATH": "/nonexistent-rlctl-test"]

        // The exporter first: it reads a recording that begins while it runs from its start, and keeps an ended
        // process's series 15 s, so Prometheus has all of it, as the recording's summary does.
        let top = try RunningProcess(Self.rlctl, ["top", "--serve", "127.0.0.1:0", "--stall", "40ms", "--interval", "500ms"],
                                     ProcessOptions(environment: environment, timeout: .seconds(180), ownProcessGroup: true))
        defer { top.send(SIGTERM); _ = top.wait() }
        let exporter = try #require(exporterPort(of: top), "top says where it serves: \(top.outputSoFar.stderr)")

        var serverEnvironment = environment
        serverEnvironment["RLCTL_STALL_THRESHOLD"] = "40ms"
        let recording = try RunningProcess(Self.rlctl, ["record", "--tracer", "embedded", "--output", trace, "--", HTTPServerEndToEndTests.server,
                                                        "--port", "0", "--threads", "2", "--duration", "20s", "--probe", "10ms", "--metrics"],
                                           ProcessOptions(environment: serverEnvironment, timeout: .seconds(120), ownProcessGroup: true))
        defer { recording.send(SIGKILL, toGroup: true); _ = recording.wait() }
        #expect(eventually { recording.outputSoFar.stdout.contains("listening on") })
        let port = try #require(recording.outputSoFar.stdout.firstMatch(of: /listening on 127\.0\.0\.1:(\d+)/).flatMap { Int($0.output.1) },
                                "the server prints its port: \(recording.outputSoFar.stdout)")
        let prometheus = try LocalPrometheus(scraping: ["127.0.0.1:\(port)", "127.0.0.1:\(exporter)"])
        defer { prometheus.stop() }
        // Two sources of the same names: the server's own instruments, and rlctl's series (which carry the kind).
        let sources = [("the library", "instance=\"127.0.0.1:\(port)\""), ("rlctl top --serve", "runloop_kind=\"NIO\"")]
        for (source, selector) in sources {
            #expect(prometheus.value("count(runloop_iterations{\(selector)})", timeout: .seconds(60)) { $0 == 2 } == 2,
                    "\(source): one series per event loop")
        }

        // Five 60 ms blocks in channelRead (the classic mistake): each a stall of the loop that served it.
        for _ in 0..<5 {
            #expect(loopbackGet(port: port, path: "/slow?ms=60")?.status == 200)
            usleep(100_000)
        }
        for (source, selector) in sources {
            // At least the five (a loaded machine may add a tick of its own); each loop's count is checked below.
            #expect((prometheus.value("sum(runloop_stalls{\(selector)})", timeout: .seconds(30)) { $0 >= 5 } ?? 0) >= 5, "\(source)")
        }

        let output = recording.wait()
        #expect(output.status == 0, "\(output.termination): \(output.stderr)")
        var reader = try TraceReaders.open(trace)
        var options = TraceSummarizer.Options()
        options.stallThreshold = 40_000_000
        let summary = try TraceSummarizer.summarize(&reader, options: options)
        let loops = try #require(summary.nio?.loops)
        #expect(loops.count == 2)
        // rlctl's series of the ended server stay 15 s after it: wait for a scrape after its last figures.
        sleep(3)
        for loop in loops {
            for (source, selector) in sources {
                let series = "\(selector),runloop_thread=\"\(loop.threadID)\""
                // The last scrape's totals (the library's: up to a second before the server ended).
                let stalls = prometheus.value("max_over_time(runloop_stalls{\(series)}[5m])")
                #expect(stalls == Double(loop.stalls), "\(source), loop on thread \(loop.threadID): Prometheus \(stalls ?? -1), the recording \(loop.stalls)")
                let active = try #require(prometheus.value("max_over_time(runloop_time{\(series),runloop_state=\"active\"}[5m])"), "\(source)")
                let idle = try #require(prometheus.value("max_over_time(runloop_time{\(series),runloop_state=\"idle\"}[5m])"), "\(source)")
                #expect(abs(active / (active + idle) - loop.utilization) <= 0.02,
                        "\(source), loop on thread \(loop.threadID): Prometheus \(active) s active, \(idle) s idle; the recording's utilization \(loop.utilization)")
            }
            // The lag: each run of the lateness probe is one wake-up delay in the library's histogram, the same
            // value the recording has, so count and mean agree with the recording's probe (less the firings after
            // the last scrape).
            let probe = try #require(loop.probe, "the recording has the probe's runs on thread \(loop.threadID)")
            let series = "instance=\"127.0.0.1:\(port)\",runloop_thread=\"\(loop.threadID)\""
            let count = try #require(prometheus.value("max_over_time(runloop_wakeup_delay_count{\(series)}[5m])"))
            let sum = try #require(prometheus.value("max_over_time(runloop_wakeup_delay_sum{\(series)}[5m])"))
            #expect(count <= Double(probe.firings) && count >= Double(probe.firings) - 300,
                    "loop on thread \(loop.threadID): Prometheus \(count) delays, the recording \(probe.firings) probe runs")
            let mean = sum / max(count, 1), recorded = probe.lateness.mean / 1e9
            #expect(abs(mean - recorded) <= max(0.1 * recorded, 20e-6),
                    "loop on thread \(loop.threadID): Prometheus's mean delay \(mean) s, the recording's probe lateness mean \(recorded) s")
        }
        #expect(loops.reduce(0) { $0 + $1.stalls } >= 5)
    }
}
