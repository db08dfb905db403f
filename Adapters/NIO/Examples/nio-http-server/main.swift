import NIOHTTPExample
import NIOPosix
import RunLoopNIO

// An HTTP/1.1 server whose event loops are traced (the README's SwiftNIO walkthrough):
//   nio-http-server --port 0 --threads 2 --duration 6s [--probe 10ms]
// prints "listening on 127.0.0.1:PORT", serves GET / and GET /slow?ms=N, and exits by itself after --duration.
// Under `rlctl record` (or RLCTL_TRACER=embedded RLCTL_TRACE_DIR=DIR) its loops are recorded.

let options = ExampleServer.options(Array(CommandLine.arguments.dropFirst()))
let group = NIOLoopTracing.makeEventLoopGroup(numberOfThreads: options.threads)
let probe = options.probeInterval.map { NIOLoopTracing.startLatenessProbe(on: group, every: $0) }
ExampleServer.serve(options, on: group) { channel in
    try channel.pipeline.syncOperations.addHandler(NIOLoopTracing.ChannelHandler(label: "http"))
}
probe?.stop()
try? group.syncShutdownGracefully()
