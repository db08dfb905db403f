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
    // swift-prometheus's default buckets start at 5 ms; a loop's delays are microseconds.
    let loopBuckets: [Duration] = [.microseconds(10), .microseconds(50), .microseconds(100), .microseconds(500), .milliseconds(1),
                                   .milliseconds(5), .milliseconds(10), .milliseconds(50), .milliseconds(100), .milliseconds(500)]
    factory.durationHistogramBuckets[LoopMetrics.Name.wakeUpDelay] = loopBuckets
    factory.durationHistogramBuckets[LoopMetrics.Name.timerLateness] = loopBuckets
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
