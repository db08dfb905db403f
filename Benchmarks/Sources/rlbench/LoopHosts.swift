import CoreFoundation
import Foundation
import NIOCore
import RunLoopCore

// The loop threads the cross-thread benchmarks talk to: one per peer, each sleeping in its loop until it is
// given work, each taking blocks from any thread the way its API intends.

/// A loop on its own thread that accepts blocks from other threads.
protocol BlockTarget {
    /// Queues `block` from the calling (other) thread and makes sure the loop will run it.
    func submit(_ block: @escaping @Sendable () -> Void)
    /// Returns once the loop is blocked waiting, as far as the peer lets anyone tell.
    func waitUntilAsleep()
    /// Stops the loop and joins its thread.
    func finish()
    /// How many times the loop has gone to sleep so far, where the peer tells (RunLoopCore only).
    var sleeps: UInt64? { get }
}

extension BlockTarget {
    var sleeps: UInt64? { nil }
}

/// RunLoopCore: a loop running the default mode on its own thread. A custom source keeps the mode alive; it
/// is also what `signalAndWakeUp()` pings, calling `onSignal` on the loop thread.
final class LoopCoreHost: BlockTarget {
    let loop: Loop
    let source: LoopSource
    private let thread: BenchThread

    init(name: String, onSignal: @escaping @Sendable () -> Void = {}) {
        let published = Published<(Loop, LoopSource)>()
        thread = BenchThread(name: name) {
            let loop = Loop.current
            let source = LoopSource(label: "rlbench.keepalive", perform: onSignal)
            loop.add(source, forMode: .default)
            published.publish((loop, source))
            // Returns `stopped` when finish() asks.
            loop.run(mode: .default, timeout: Loop.forever)
            source.invalidate()
        }
        (loop, source) = published.wait()
    }

    func submit(_ block: @escaping @Sendable () -> Void) {
        // From another thread, perform wakes the loop by itself.
        loop.perform(block)
    }

    func waitUntilAsleep() {
        while !loop.isWaiting { sleepNanoseconds(10_000) }
    }

    var sleeps: UInt64? { loop.statistics.sleeps }

    func finish() {
        let loop = self.loop
        loop.perform { loop.stop() }
        thread.join()
    }
}

/// Foundation: a `RunLoop` running the default mode on its own thread. `RunLoop.perform` queues the block but
/// on Linux does not wake a sleeping loop, so every submit is followed by `CFRunLoopWakeUp` on that loop,
/// which is how cross-thread blocks are meant to reach it.
final class FoundationHost: BlockTarget {
    private let runLoop: Handoff<RunLoop>
    private let cfRunLoop: Handoff<CFRunLoop>
    private let thread: BenchThread
    /// Read and written on the loop thread only (the stopping block runs there).
    private let stopped = Handoff(false)

    init(name: String) {
        let published = Published<(Handoff<RunLoop>, Handoff<CFRunLoop>)>()
        let stopped = self.stopped
        thread = BenchThread(name: name) {
            let runLoop = RunLoop.current
            // A timer that never fires keeps the mode from being empty.
            let keepAlive = Timer(fire: .distantFuture, interval: 0, repeats: false) { _ in }
            runLoop.add(keepAlive, forMode: .default)
            published.publish((Handoff(runLoop), Handoff(CFRunLoopGetCurrent())))
            while !stopped.value { _ = runLoop.run(mode: .default, before: .distantFuture) }
            keepAlive.invalidate()
        }
        (runLoop, cfRunLoop) = published.wait()
    }

    func submit(_ block: @escaping @Sendable () -> Void) {
        runLoop.value.perform(block)
        CFRunLoopWakeUp(cfRunLoop.value)
    }

    func waitUntilAsleep() {}

    func finish() {
        let stopped = self.stopped
        submit {
            stopped.value = true
            CFRunLoopStop(CFRunLoopGetCurrent())
        }
        thread.join()
    }
}

/// SwiftNIO: an event loop of a one-thread group; `execute` from another thread wakes its epoll through an
/// eventfd. The group outlives the host, so finish() has nothing to do.
final class NIOHost: BlockTarget {
    let eventLoop: any EventLoop

    init(eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    func submit(_ block: @escaping @Sendable () -> Void) {
        eventLoop.execute(block)
    }

    func waitUntilAsleep() {}
    func finish() {}
}
