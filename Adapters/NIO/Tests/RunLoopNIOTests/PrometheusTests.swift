import Analysis
import Foundation
import Glibc
import Testing
import TestSupport
import TraceReading

/// A NIO server made with its metrics in one line (`nio-http-server --metrics`: `NIOLoopTracing.makeEventLoopGroup
/// (numberOfThreads:metrics:)` on swift-prometheus, served at its own /metrics), scraped by a real Prometheus while
/// `rlctl record`'s embedded tracer records it: Prometheus's stalls and utilization per event loop against the
/// recording's own summary. Fails, not skips, under CI=true without Prometheus.
@Suite struct PrometheusTests {
    static let requirement = TestRequirement(missing: TestEnvironment.executable("prometheus") == nil ? "prometheus" : nil,
                                             problem: "the test's Prometheus server is not installed")

    @Test(.enabled(if: requirement.shouldRun, requirement.skipComment))
    func prometheusHasEachLoopsStallsAndUtilizationAsTheRecordingsSummary() throws {
        guard Self.requirement.requireMet() else { return }
        let trace = temporaryPath("nio-metrics.rltrace")
        defer { try? FileManager.default.removeItem(atPath: trace) }
        let server = try RunningProcess(HTTPServerEndToEndTests.server,
                                        ["--port", "0", "--threads", "2", "--duration", "20s", "--probe", "10ms", "--metrics"],
                                        ProcessOptions(environment: ["RLCTL_TRACER": "embedded", "RLCTL_TRACE_DIR": trace,
                                                                     "RLCTL_STALL_THRESHOLD": "40ms"], timeout: .seconds(90)))
        defer { server.send(SIGKILL); _ = server.wait() }
        #expect(eventually { server.outputSoFar.stdout.contains("\n") })
        let port = try #require(server.outputSoFar.stdout.split(separator: "\n").first.flatMap { Int($0.replacing("listening on 127.0.0.1:", with: "")) },
                                "the server prints its port: \(server.outputSoFar.stdout)")
        let prometheus = try LocalPrometheus(scraping: ["127.0.0.1:\(port)"])
        defer { prometheus.stop() }
        #expect(prometheus.value("count(runloop_iterations)", timeout: .seconds(60)) { $0 == 2 } == 2, "one series per event loop")

        // Five 60 ms blocks in channelRead (the classic mistake): each a stall of the loop that served it.
        for _ in 0..<5 {
            #expect(loopbackGet(port: port, path: "/slow?ms=60")?.status == 200)
            usleep(100_000)
        }
        // At least the five (a loaded machine may add a tick of its own); each loop's count is checked below.
        #expect((prometheus.value("sum(runloop_stalls)", timeout: .seconds(30)) { $0 >= 5 } ?? 0) >= 5)
        // The probe's delays, as a histogram in seconds.
        #expect((prometheus.value("sum(runloop_wakeup_delay_count)") ?? 0) > 0)

        let output = server.wait()
        #expect(output.termination == .exited(0), "\(output.stderr)")
        var reader = try TraceReaders.open(trace)
        var options = TraceSummarizer.Options()
        options.stallThreshold = 40_000_000
        let summary = try TraceSummarizer.summarize(&reader, options: options)
        let loops = try #require(summary.nio?.loops)
        #expect(loops.count == 2)
        for loop in loops {
            let thread = "runloop_thread=\"\(loop.threadID)\""
            let stalls = prometheus.value("max_over_time(runloop_stalls{\(thread)}[5m])")
            #expect(stalls == Double(loop.stalls), "loop on thread \(loop.threadID): Prometheus \(stalls ?? -1), the recording \(loop.stalls)")
            let active = try #require(prometheus.value("max_over_time(runloop_time{\(thread),runloop_state=\"active\"}[5m])"))
            let idle = try #require(prometheus.value("max_over_time(runloop_time{\(thread),runloop_state=\"idle\"}[5m])"))
            #expect(abs(active / (active + idle) - loop.utilization) <= 0.02,
                    "loop on thread \(loop.threadID): Prometheus \(active) s active, \(idle) s idle; the recording's utilization \(loop.utilization)")
        }
        #expect(loops.reduce(0) { $0 + $1.stalls } >= 5)
    }
}
