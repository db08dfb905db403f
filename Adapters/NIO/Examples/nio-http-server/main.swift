import Glibc
import NIOCore
import NIOHTTP1
import NIOPosix
import RunLoopNIO

// An HTTP/1.1 server whose event loops are traced (the README's SwiftNIO walkthrough):
//   nio-http-server --port 0 --threads 2 --duration 6s
// prints "listening on 127.0.0.1:PORT", serves GET / and GET /slow?ms=N, and exits by itself after --duration.

/// One line on stderr, then exit.
func fail(_ message: String, status: Int32) -> Never {
    let line = "nio-http-server: \(message)\n"
    _ = line.withCString { write(2, $0, strlen($0)) }
    exit(status)
}

let options: Options
do {
    options = try Options(arguments: Array(CommandLine.arguments.dropFirst()))
} catch {
    fail(error.message, status: 2)
}

let group = NIOLoopTracing.makeEventLoopGroup(numberOfThreads: options.threads)
let probe = options.probeInterval.map { NIOLoopTracing.startLatenessProbe(on: group, every: $0) }

let bootstrap = ServerBootstrap(group: group)
    .serverChannelOption(.backlog, value: 256)
    .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
    .childChannelInitializer { channel in
        channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandler(NIOLoopTracing.ChannelHandler(label: "http"))
            try channel.pipeline.syncOperations.configureHTTPServerPipeline()
            try channel.pipeline.syncOperations.addHandler(HTTPHandler())
        }
    }
    .childChannelOption(.socketOption(.so_reuseaddr), value: 1)

let server: Channel
do {
    server = try bootstrap.bind(host: "127.0.0.1", port: options.port).wait()
} catch {
    try? group.syncShutdownGracefully()
    fail("cannot listen on 127.0.0.1:\(options.port): \(error)", status: 1)
}
print("listening on 127.0.0.1:\(server.localAddress?.port ?? options.port)")
fflush(nil)   // all streams: stdout is a pipe under tests and rlctl record, so fully buffered

if let duration = options.duration {
    server.eventLoop.scheduleTask(in: duration) { server.close(promise: nil) }
}
try? server.closeFuture.wait()
probe?.stop()
try? group.syncShutdownGracefully()
