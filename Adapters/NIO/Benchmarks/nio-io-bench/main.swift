// What the adapter's ChannelHandler adds to one request of the example server: a request is one channelRead and one
// channelReadComplete (a recording of the server under wrk holds 2.00 nio_io events per request and a nio_tick per
// 31 requests, a few ns more per request), so this times that pair through a pipeline with the handler in front of
// the server's last handler, and through the same pipeline without it, alternating chunks; the difference is the
// adapter's cost per request, with whichever tracer the environment installed (run it under `rlctl record`, or
// alone for the no-sink case). event-cost-bench.sh runs the variants side by side.
//
// An EmbeddedChannel keeps the kernel and NIO's I/O out of the figure, which wrk-bench.sh cannot do on a noisy
// machine: there the adapter's share is below the rounds' spread. The caches are warmer here than in a loaded
// server, so the figure is a lower bound; wrk-bench.sh's medians bound it from above.
import Glibc
import NIOCore
import NIOEmbedded
import RunLoopCore
import RunLoopNIO

/// The end of the server's pipeline: consumes the request.
final class Consumer: ChannelInboundHandler {
    typealias InboundIn = NIOAny
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}
    func channelReadComplete(context: ChannelHandlerContext) {}
}

func pipeline(traced: Bool) throws -> EmbeddedChannel {
    let channel = EmbeddedChannel()
    if traced { try channel.pipeline.syncOperations.addHandler(NIOLoopTracing.ChannelHandler(label: "bench")) }
    try channel.pipeline.syncOperations.addHandler(Consumer())
    return channel
}

/// ns per request (channelRead + channelReadComplete) over `requests` requests.
func time(_ channel: EmbeddedChannel, requests: Int, data: NIOAny) -> Double {
    let start = Loop.Instant.now
    for _ in 0..<requests {
        channel.pipeline.syncOperations.fireChannelRead(data)
        channel.pipeline.syncOperations.fireChannelReadComplete()
    }
    return Double(Loop.Instant.now.nanoseconds - start.nanoseconds) / Double(requests)
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

func fail(_ message: String) -> Never {
    let line = "nio-io-bench: \(message) (usage: nio-io-bench [--requests N] [--rounds R])\n"
    _ = line.withCString { write(2, $0, strlen($0)) }
    exit(2)
}

var requests = 20_000, rounds = 15
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    guard let value = arguments.popFirst().flatMap(Int.init), value > 0 else {
        fail("\(argument) needs a positive number")
    }
    switch argument {
    case "--requests": requests = value
    case "--rounds": rounds = value
    default:
        fail("unknown option \(argument)")
    }
}

let plain = try pipeline(traced: false), traced = try pipeline(traced: true)
// After the handler's first use, which installs the tracer `rlctl record` chose.
let tracer = LoopEventSink.current.map { "\(type(of: $0))" } ?? "no sink"
let data = NIOAny(ByteBuffer(string: "GET / HTTP/1.1\r\n\r\n"))
// Warm both (and let the handler announce its loop and label its channel) before timing.
_ = time(plain, requests: requests / 10, data: data)
_ = time(traced, requests: requests / 10, data: data)
var plainRuns: [Double] = [], tracedRuns: [Double] = [], added: [Double] = []
for round in 0..<rounds {
    // A pause between rounds, untimed: the tracer's consumer (the recorder's writer thread, LTTng's consumer
    // daemon) empties the buffers, so no round's events are dropped, which would make them look cheap.
    usleep(200_000)
    // Alternating which goes first, so that a slower stretch of the machine is shared.
    let first = round % 2 == 0
    let a = time(first ? plain : traced, requests: requests, data: data)
    let b = time(first ? traced : plain, requests: requests, data: data)
    let (p, t) = first ? (a, b) : (b, a)
    plainRuns.append(p); tracedRuns.append(t); added.append(t - p)
}
print(String(format: "%@: ns per request (read + read complete), median of %d rounds of %d: without the handler %.1f, with it %.1f, added %.1f",
             tracer, rounds, requests, median(plainRuns), median(tracedRuns), median(added)))
_ = try plain.finish()
_ = try traced.finish()
