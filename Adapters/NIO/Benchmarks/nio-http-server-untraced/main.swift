import NIOHTTPExample
import NIOPosix

// nio-http-server without the adapter (no metrics delegate, no channel handler, RunLoopNIO not linked): the
// baseline of the load benchmark, which compares its requests/s under wrk with the traced server's.

let options = ExampleServer.options(Array(CommandLine.arguments.dropFirst()))
if options.probeInterval != nil || options.metrics {
    ExampleServer.fail("--probe and --metrics need the traced server (nio-http-server)", status: 2)
}
let group = MultiThreadedEventLoopGroup(numberOfThreads: options.threads)
ExampleServer.serve(options, on: group)
try? group.syncShutdownGracefully()
