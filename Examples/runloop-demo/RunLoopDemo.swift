// runloop-demo: a small program built on RunLoopCore that is ready to be traced, the way any application would be.
//
//     swift build -c release
//     rlctl record -- .build/release/runloop-demo 2        # trace it for 2 seconds and summarize
//
// It animates "frames" on a 16 ms timer, handles "network" messages a background thread signals, and runs
// blocks another thread performs; every 20th frame is slow, so the summary has drift and stalls to show.
import Dispatch
import Glibc
import RunLoopCore
import Synchronization
import Tracing

@main
enum RunLoopDemo {
    static func main() {
        // The one line that makes a program observable: under `rlctl record` it installs the tracer rlctl chose
        // (LTTng or the embedded recorder); run by itself (RLCTL_TRACER unset) it installs nothing.
        LoopEventSink.installFromEnvironment()

        let argument = CommandLine.arguments.dropFirst().first
        let seconds = argument.map { Double($0) ?? .nan } ?? 2
        guard seconds > 0, seconds <= 3600, CommandLine.arguments.count <= 2 else {
            let usage = "usage: runloop-demo [seconds, default 2]\n"
            _ = usage.withCString { write(STDERR_FILENO, $0, strlen($0)) }
            exit(2)
        }

        let loop = Loop.current
        // Handlers are @Sendable (they are added from any thread), so even loop-thread-only state is Sendable.
        let frames = FrameCounter()
        let frame = LoopTimer(after: .milliseconds(16), interval: .milliseconds(16), tolerance: .milliseconds(2),
                              label: "frame") { _ in
            if frames.next() % 20 == 0 { burn(.milliseconds(24)) }   // a slow frame
        }
        loop.add(frame, forMode: .common)

        let network = LoopSource(label: "network") { burn(.microseconds(50)) }
        loop.add(network, forMode: .default)

        let producer = Ticker(every: .milliseconds(5)) { network.signalAndWakeUp() }
        let mover = Ticker(every: .milliseconds(3)) { loop.perform { burn(.microseconds(20)) } }

        let result = loop.run(mode: .default, timeout: .nanoseconds(Int64(seconds * 1e9)))
        producer.stop()
        mover.stop()
        print("runloop-demo: \(frames.value) frames, run ended \(result)")
    }

    /// Spends CPU time on the calling thread, like real work.
    @Sendable static func burn(_ duration: Duration) {
        let end = Loop.Instant.now.advanced(by: duration)
        while Loop.Instant.now < end {}
    }
}

/// How many frames were drawn.
final class FrameCounter: Sendable {
    private let count = Atomic<Int>(0)
    func next() -> Int { count.add(1, ordering: .relaxed).newValue }
    var value: Int { count.load(ordering: .relaxed) }
}

/// A background thread calling `body` periodically until stopped.
final class Ticker: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    init(every period: Duration, _ body: @escaping @Sendable () -> Void) {
        let nanoseconds = Int(period / .nanoseconds(1))
        DispatchQueue.global().async { [done, finished] in
            while done.wait(timeout: .now() + .nanoseconds(nanoseconds)) == .timedOut { body() }
            finished.signal()
        }
    }

    func stop() {
        done.signal()
        finished.wait()
    }
}
