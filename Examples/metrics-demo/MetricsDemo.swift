// metrics-demo: a RunLoopCore program whose loop exports its metrics (docs/metrics.md) through swift-metrics on
// swift-prometheus, and serves the scrape itself, from the loop:
//
//     metrics-demo [--port P] [--duration D]        # D: 20s, 500ms; until killed without it
//
// It prints "listening on 127.0.0.1:PORT" and answers GET /metrics (Prometheus's text format) and GET /burn?ms=N,
// which blocks the loop for N ms (a stall when N is past Loop.stallThreshold: RLCTL_STALL_THRESHOLD=40ms in the
// environment). A 10 ms timer does 1 ms of work. Under `rlctl record` its loop is traced as well.
import Glibc
import Metrics
import Prometheus
import RunLoopCore
import RunLoopMetrics
import Tracing

@main
enum MetricsDemo {
    static func main() {
        // A tracer first, if rlctl asked for one: the metrics ride on the seam over it.
        LoopEventSink.installFromEnvironment()
        let options = Options(Array(CommandLine.arguments.dropFirst()))

        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        // Buckets for microseconds: swift-prometheus's default ones start at 5 ms.
        for name in [LoopMetrics.Name.wakeUpDelay, LoopMetrics.Name.timerLateness] {
            factory.durationHistogramBuckets[name] = LoopMetrics.delayBuckets
        }
        MetricsSystem.bootstrap(factory)

        let loop = Loop.current
        let metrics = LoopMetrics.attach(to: loop)   // the one call

        loop.add(LoopTimer(after: .milliseconds(10), interval: .milliseconds(10), label: "work") { _ in burn(.milliseconds(1)) },
                 forMode: .default)
        let server: LoopHTTPServer
        do {
            server = try LoopHTTPServer(port: options.port, on: loop) { path in
                switch path.split(separator: "?", maxSplits: 1).first ?? "" {
                case "/metrics":
                    metrics.update()   // the time and utilization up to now, not to the last interval
                    return (200, registry.emitToString())
                case "/burn":
                    guard let milliseconds = path.firstMatch(of: /[?&]ms=(\d{1,5})(&|$)/).flatMap({ Int($0.output.1) }) else {
                        return (400, "give /burn?ms=N (N up to 99999)\n")
                    }
                    burn(.milliseconds(milliseconds))
                    return (200, "burned \(milliseconds) ms\n")
                default:
                    return (404, "not found: GET /metrics or /burn?ms=N\n")
                }
            }
        } catch {
            fail("\(error)", status: 1)
        }
        let line = "listening on 127.0.0.1:\(server.port)\n"
        _ = line.withCString { write(STDOUT_FILENO, $0, strlen($0)) }

        _ = loop.run(mode: .default, timeout: options.duration ?? Loop.forever)
        server.stop()
        metrics.detach()
    }

    /// Spends CPU time on the loop's thread, like real work.
    @Sendable static func burn(_ duration: Duration) {
        let end = Loop.Instant.now.advanced(by: duration)
        while Loop.Instant.now < end {}
    }
}

/// --port P (0: any free port, the default) and --duration D.
struct Options {
    var port = 0
    var duration: Duration?

    init(_ arguments: [String]) {
        var rest = arguments[...]
        while let flag = rest.popFirst() {
            guard ["--port", "--duration"].contains(flag) else { fail("unknown option \(flag) (options: --port P --duration D)") }
            guard let value = rest.popFirst() else { fail("\(flag) needs a value") }
            switch flag {
            case "--port":
                guard let port = Int(value), (0...65535).contains(port) else { fail("--port \(value): not a port number") }
                self.port = port
            case "--duration":
                guard let duration = Self.duration(value) else { fail("--duration \(value): give a duration like 20s or 500ms") }
                self.duration = duration
            default:
                break
            }
        }
    }

    static func duration(_ text: String) -> Duration? {
        guard let match = text.wholeMatch(of: /(\d{1,9})(ms|s)/), let count = Int(match.output.1), count > 0 else { return nil }
        return match.output.2 == "ms" ? .milliseconds(count) : .seconds(count)
    }
}

func fail(_ message: String, status: Int32 = 2) -> Never {
    let line = "metrics-demo: \(message)\n"
    _ = line.withCString { write(STDERR_FILENO, $0, strlen($0)) }
    exit(status)
}
