import Glibc
import NIOCore
import NIOHTTP1
import NIOPosix

/// The example HTTP server, shared by `nio-http-server` (traced) and `nio-http-server-untraced` (the same server
/// without the adapter, the baseline of the load benchmark).
public enum ExampleServer {
    /// The command line, or a one-line error and exit 2.
    public static func options(_ arguments: [String]) -> Options {
        do {
            return try Options(arguments: arguments)
        } catch {
            fail(error.message, status: 2)
        }
    }

    /// Serves on `group` until `options.duration` has passed (forever without it), after printing
    /// "listening on 127.0.0.1:PORT". `prepare` adds handlers in front of the HTTP ones on each new connection.
    /// `metrics`, when given, answers GET /metrics.
    public static func serve(_ options: Options, on group: MultiThreadedEventLoopGroup,
                             metrics: (@Sendable () -> String)? = nil,
                             prepare: @escaping @Sendable (any Channel) throws -> Void = { _ in }) {
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try prepare(channel)
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(HTTPHandler(metrics: metrics))
                }
            }
        let server: any Channel
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
    }

    /// One line on stderr, then exit.
    public static func fail(_ message: String, status: Int32) -> Never {
        let line = "\(CommandLine.arguments.first.map { String($0.split(separator: "/").last ?? "") } ?? "server"): \(message)\n"
        _ = line.withCString { write(2, $0, strlen($0)) }
        exit(status)
    }
}
