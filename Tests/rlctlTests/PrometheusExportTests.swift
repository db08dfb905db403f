import Foundation
import Glibc
import Testing
import TestSupport

/// Loop metrics scraped by a real Prometheus (issue 32), against the recording's own summary: `rlctl top --serve`
/// with a Node server seen through `record --any` and a RunLoopCore loop recorded by `rlctl run`, both embedded
/// recordings on this machine; and a program's own loop through RunLoopMetrics on swift-prometheus. The exporter's
/// test keeps its own recording registry and hides LTTng (PATH), so top sees only its recordings. Fails, not
/// skips, under CI=true when Node or Prometheus is missing.
@Suite(.serialized) struct PrometheusExportTests {
    static let requirement = AnyProgramTests.requirement(["node", "prometheus"])

    @Test(.enabled(if: requirement.shouldRun, requirement.skipComment))
    func prometheusSeesTheLoopsStallsAndUtilizationTheRecordingsOwnSummaryHas() throws {
        guard Self.requirement.requireMet() else { return }
        let registry = temporaryPath("live-registry"), nodeTrace = temporaryPath("node-served.rltrace")
        let jankTrace = temporaryPath("jank-served.rltrace"), report = temporaryPath("node-served.json")
        defer { for path in [registry, nodeTrace, jankTrace, report] { try? FileManager.default.removeItem(atPath: path) } }
        let environment = TopEmbeddedTests.isolated(registry)
        let node = try #require(TestEnvironment.executable("node"))
        let port = freeLoopbackPort()

        // The exporter and Prometheus first: top reads each recording that begins while it runs from its start,
        // and keeps a loop's series 15 s after its process ended, so Prometheus has the whole recording, as its
        // own summary does (stalls the load of a CI machine adds included).
        let top = try CLI.start(["top", "--serve", "127.0.0.1:0", "--stall", "40ms", "--interval", "500ms"], environment: environment)
        defer { top.send(SIGTERM); _ = top.wait() }
        let exporter = try #require(exporterPort(of: top), "top says where it serves: \(top.outputSoFar.stderr)")
        let prometheus = try LocalPrometheus(scraping: ["127.0.0.1:\(exporter)"])
        defer { prometheus.stop() }

        // Node: 1 ms of work every 10 ms for 25 s; the stalls come when the test asks (GET /burn) once Prometheus
        // has the loop.
        let recording = try CLI.start(["record", "--any", "--tracer", "embedded", "--output", nodeTrace, "--",
                                       node, "\(AnyProgramTests.programs)/node-server.js", "\(port)", "25", "10", "1", report],
                                      environment: environment)
        defer { recording.send(SIGKILL, toGroup: true); _ = recording.wait() }
        let jank = try CLI.start(["run", "jank", "--duration", "60s", "--tracer", "embedded", "--trace", jankTrace], environment: environment)
        defer { jank.send(SIGTERM); _ = jank.wait() }
        try #require(AnyProgramTests.waitForPort(port), "node did not listen on \(port)")

        let nodePID = try #require(Self.nodePID(parent: recording.pid), "node's pid")
        let loop = "pid=\"\(nodePID)\",runloop_thread=\"\(nodePID)\",runloop_kind=\"wait\""
        #expect(prometheus.value("runloop_iterations{\(loop)}", timeout: .seconds(60)) { $0 > 0 } != nil, "Prometheus has Node's loop")

        for _ in 0..<5 {
            #expect(loopbackGet(port: port, path: "/burn?ms=60")?.status == 200)
            usleep(200_000)
        }
        let stalls = prometheus.value("max_over_time(runloop_stalls{\(loop)}[5m])", timeout: .seconds(30)) { $0 >= 5 }
        // At least the five 60 ms burns over the 40 ms threshold (a loaded machine may add its own).
        #expect((stalls ?? 0) >= 5, "\(stalls ?? -1) stalls")

        // The RunLoopCore loop: its wake-up delay gauge, which only that kind has, and its kind and name.
        let core = prometheus.query("runloop_wakeup_delay_p99{pid=\"\(jank.pid)\"}") ?? []
        #expect(core.count == 1 && core.first?.labels["runloop_kind"] == "RunLoopCore" && core.first?.labels["runloop_name"] == "main",
                "\(core.map(\.labels))")
        #expect((core.first?.value ?? 0) > 0 && (core.first?.value ?? 1) < 0.1, "a p99 in seconds: \(core.map(\.value))")
        // Node's lag, from its waits: each 10 ms interval timer's wait woke past its timeout by well under 100 ms.
        let lag = prometheus.value("max_over_time(runloop_wakeup_delay_p99{\(loop)}[5m])")
        #expect((lag ?? 0) > 0 && (lag ?? 1) < 0.1, "Node's wake-up delay p99 in seconds: \(lag ?? -1)")


        let recorded = recording.wait()
        try #require(recorded.status == 0, "\(recorded.termination): \(recorded.stderr)")
        // The ended process's series end 15 s after it (time for Prometheus to scrape its last figures).
        #expect(eventually(timeout: .seconds(45)) {
            usleep(200_000)
            return prometheus.query("runloop_iterations{\(loop)}")?.isEmpty == true
        }, "Node's series ended with it")
        // Its totals over its whole life in the exporter (the last scrape before its series ended).
        let final = prometheus.value("max_over_time(runloop_stalls{\(loop)}[5m])")
        let active = try #require(prometheus.value("max_over_time(runloop_time{\(loop),runloop_state=\"active\"}[5m])"))
        let idle = try #require(prometheus.value("max_over_time(runloop_time{\(loop),runloop_state=\"idle\"}[5m])"))
        let summary = try AnyProgramTests.waitLoop(in: try AnyProgramTests.summary(nodeTrace, stall: "40ms"), pid: nodePID, threadID: nodePID)
        #expect(summary["stalls"] as? Int == Int(final ?? -1), "the recording's own stalls: \(summary["stalls"] ?? "none"), Prometheus's \(final ?? -1)")
        let utilization = try #require(summary["utilization"] as? Double)
        #expect(abs(active / (active + idle) - utilization) <= 0.02,
                "Prometheus: \(active) s active, \(idle) s idle; the recording's utilization \(utilization)")
    }

    /// RunLoopMetrics in a RunLoopCore program on swift-prometheus (Examples/metrics-demo: the one call, and the
    /// scrape served from the loop itself), scraped by a real Prometheus while `rlctl record` records the program:
    /// Prometheus's stalls, utilization and timer callouts against the recording's own summary.
    @Test(.enabled(if: libraryRequirement.shouldRun, libraryRequirement.skipComment))
    func prometheusHasTheLibrarysLoopFiguresAsTheRecordingsSummary() throws {
        guard Self.libraryRequirement.requireMet() else { return }
        let trace = temporaryPath("metrics-demo.rltrace")
        defer { try? FileManager.default.removeItem(atPath: trace) }
        let port = freeLoopbackPort()
        let recording = try CLI.start(["record", "--tracer", "embedded", "--output", trace, "--",
                                       CLI.sibling("metrics-demo"), "--port", "\(port)", "--duration", "20s"],
                                      environment: ["RLCTL_STALL_THRESHOLD": "40ms"])
        defer { recording.send(SIGKILL, toGroup: true); _ = recording.wait() }
        try #require(AnyProgramTests.waitForPort(port), "metrics-demo did not listen on \(port): \(recording.outputSoFar.stderr)")
        let prometheus = try LocalPrometheus(scraping: ["127.0.0.1:\(port)"])
        defer { prometheus.stop() }
        let loop = "runloop_name=\"main\""
        #expect(prometheus.value("runloop_iterations{\(loop)}", timeout: .seconds(60)) { $0 > 0 } != nil, "Prometheus has the loop")

        // Five 60 ms answers: each a stall of the loop that serves them.
        for _ in 0..<5 {
            #expect(loopbackGet(port: port, path: "/burn?ms=60")?.status == 200)
            usleep(100_000)
        }
        // At least the five (a loaded machine may add its own); equal to the recording's count below.
        #expect((prometheus.value("runloop_stalls{\(loop)}", timeout: .seconds(30)) { $0 >= 5 } ?? 0) >= 5)

        let recorded = recording.wait()
        try #require(recorded.status == 0, "\(recorded.termination): \(recorded.stderr)")
        let summary = try #require((try AnyProgramTests.summaryObject(trace, stall: "40ms"))["loops"] as? [[String: Any]])
        try #require(summary.count == 1, "one loop: \(summary.map { $0["name"] ?? "?" })")
        let own = summary[0]
        // The last scrape, up to a second before the program ended.
        let stalls = prometheus.value("max_over_time(runloop_stalls{\(loop)}[5m])")
        #expect(stalls == (own["stalls"] as? Int).map(Double.init), "Prometheus \(stalls ?? -1), the recording \(own["stalls"] ?? "none")")
        let active = try #require(prometheus.value("max_over_time(runloop_time{\(loop),runloop_state=\"active\"}[5m])"))
        let idle = try #require(prometheus.value("max_over_time(runloop_time{\(loop),runloop_state=\"idle\"}[5m])"))
        let utilization = try #require(own["utilization"] as? Double)
        #expect(abs(active / (active + idle) - utilization) <= 0.02,
                "Prometheus: \(active) s active, \(idle) s idle; the recording's utilization \(utilization)")
        // Every timer callout's lateness, as a histogram in seconds: the 10 ms timer's firings, less those after
        // the last scrape.
        let timed = try #require(prometheus.value("max_over_time(runloop_timer_lateness_count{\(loop)}[5m])"))
        let firings = try #require(own["timerFirings"] as? Int)
        #expect(timed <= Double(firings) && timed >= Double(firings - 300), "Prometheus \(timed) timer callouts, the recording \(firings)")
        // The lag: each callout's lateness is the recording's own (the embedded tracer lends the metrics its
        // timestamps), so the means agree, less the callouts after the last scrape.
        let lateness = try #require(prometheus.value("max_over_time(runloop_timer_lateness_sum{\(loop)}[5m])")) / max(timed, 1)
        let recordedLateness = try #require((own["timerLateness"] as? [String: Any])?["mean"] as? Double) / 1e9
        #expect(abs(lateness - recordedLateness) <= max(0.1 * recordedLateness, 20e-6),
                "Prometheus's mean timer lateness \(lateness) s, the recording's \(recordedLateness) s")
    }

    static let libraryRequirement = TestRequirement(missing: TestEnvironment.executable("prometheus") == nil ? "prometheus" : nil,
                                                    problem: "the test's Prometheus server is not installed")

    /// The pid of `parent`'s child (the program `record --any` started).
    static func nodePID(parent: Int32) -> Int? {
        var found: Int?
        _ = eventually(timeout: .seconds(10)) {
            let text = (try? String(contentsOfFile: "/proc/\(parent)/task/\(parent)/children", encoding: .utf8)) ?? ""
            found = text.split(separator: " ").first.flatMap { Int($0) }
            usleep(20_000)
            return found != nil
        }
        return found
    }
}

/// `rlctl top --serve`'s mistakes and endings, without Prometheus.
@Suite struct ServeCommandTests {
    @Test(arguments: [
        (["--serve", "0.0.0.0:0"], "not a loopback address, so other machines could read this machine's loops; give --serve-public"),
        (["--serve", "9464"], "give HOST:PORT"),
        (["--serve", "127.0.0.1:0", "--once"], "--serve serves until it is stopped: leave out --once and --format json"),
        (["--serve-public"], "--serve-public and --serve-loops go with --serve"),
        (["--serve", "127.0.0.1:0", "--serve-loops", "0"], "--serve-loops must be between 1 and 100000"),
    ])
    func aBadServeIsOneLineAndExitTwo(arguments: [String], expected: String) throws {
        let result = try CLI.run(["top"] + arguments, environment: TopEmbeddedTests.isolated(temporaryPath("live-registry")))
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains(expected), "\(result.stderr)")
        #expect(result.stdout.isEmpty)
    }

    @Test func aPortInUseFailsBeforeAnythingStartsAndSigtermEndsServing() throws {
        let environment = TopEmbeddedTests.isolated(temporaryPath("live-registry"))
        let first = try CLI.start(["top", "--serve", "127.0.0.1:0", "--kernel", "off"], environment: environment)
        let served = try #require(exporterPort(of: first), "\(first.outputSoFar.stderr)")
        let scrape = loopbackGet(port: served, path: "/metrics")
        #expect(scrape?.status == 200 && scrape?.body.contains("rlctl_loops 0") == true, "\(scrape?.body ?? "no answer")")

        let second = try CLI.run(["top", "--serve", "127.0.0.1:\(served)"], environment: environment)
        #expect(second.status == 2)
        #expect(second.stderr == "rlctl: --serve 127.0.0.1:\(served): cannot listen: the port is in use (another exporter?)\n", "\(second.stderr)")

        first.send(SIGTERM)
        let ended = first.wait()
        #expect(ended.status == 0, "\(ended.stderr)")
        #expect(loopbackGet(port: served, path: "/metrics", timeout: 1) == nil, "nothing serves after it ended")
    }
}
