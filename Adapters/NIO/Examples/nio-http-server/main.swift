import Metrics
import NIOHTTPExample
import NIOPosix
import Prometheus
import RunLoopMetrics
import RunLoopNIO

// An HTTP/1.1 server whose event loops are traced (the README's SwiftNIO walkthrough):
//   nio-http-server --port 0 --threads 2 --duration 6s [--probe 10ms] [--metrics]
// prints "listening on 127.0.0.1:PORT", serves GET / and GET /slow?ms=N, and exits by itself after --duration.
// Under `rlctl record` (or RLCTL_TRACER=embedded RLCTL_TRACE_DIR=DIR) its loops are recorded. With --metrics the
// group is made with its loops' metrics (docs/metrics.md) on swift-prometheus, served at GET /metrics.

let options = ExampleServer.options(Array(CommandLine.arguments.dropFirst()))
var metrics: (@Sendable () -> String)?
let group: MultiThreadedEventLoopGroup
var loopMetrics: LoopMetricsHandle?
if options.metrics {
    let registry = PrometheusCollectorRegistry()
    var factory = PrometheusMetricsFactory(registry: registry)
    // Buckets for microseconds: swift-prometheus's default ones start at 5 ms.
    for name in [LoopMetrics.Name.wakeUpDelay, LoopMetrics.Name.timerLateness] {
        factory.durationHistogramBuckets[name] = LoopMetrics.delayBuckets
    }
    MetricsSystem.bootstrap(factory)
    // The one line: a group whose loops export their metrics.
    (group, loopMetrics) = NIOLoopTracing.makeEventLoopGroup(numberOfThreads: options.threads, metrics: MetricsSystem.factory)
    metrics = { registry.emitToString() }
} else {
    group = NIOLoopTracing.makeEventLoopGroup(numberOfThreads: options.threads)
}
let probe = options.probeInterval.map { NIOLoopTracing.startLatenessProbe(on: group, every: $0) }
ExampleServer.serve(options, on: group, metrics: metrics) { channel in
    try channel.pipeline.syncOperations.addHandler(NIOLoopTracing.ChannelHandler(label: "http"))
}
probe?.stop()
try? group.syncShutdownGracefully()
loopMetrics?.detach()
