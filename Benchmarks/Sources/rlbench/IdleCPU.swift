import CBenchSupport
import Foundation
import NIOCore
import NIOPosix
import RunLoopCore

// Benchmark 4a: what an idle loop costs. Each peer's loop sleeps for the same wall time on its own thread,
// all at once (they are idle, so they do not disturb each other and the benchmark takes the idle time once),
// and the thread's own CPU time and context switches are read with getrusage(RUSAGE_THREAD) around it.

struct IdleConfiguration {
    var nanoseconds: UInt64
}

struct ThreadUsage {
    var cpuNanoseconds: UInt64
    var voluntarySwitches: UInt64
    var involuntarySwitches: UInt64

    static func now() -> ThreadUsage {
        var usage = cb_thread_usage()
        precondition(cb_thread_usage_now(&usage) == 0, "rlbench: getrusage(RUSAGE_THREAD) failed")
        return ThreadUsage(cpuNanoseconds: usage.user_ns + usage.system_ns,
                           voluntarySwitches: usage.voluntary_switches, involuntarySwitches: usage.involuntary_switches)
    }

    static func - (lhs: ThreadUsage, rhs: ThreadUsage) -> ThreadUsage {
        ThreadUsage(cpuNanoseconds: lhs.cpuNanoseconds - rhs.cpuNanoseconds,
                    voluntarySwitches: lhs.voluntarySwitches - rhs.voluntarySwitches,
                    involuntarySwitches: lhs.involuntarySwitches - rhs.involuntarySwitches)
    }
}

struct IdleResult {
    var wallNanoseconds: UInt64
    var usage: ThreadUsage
    /// Times the loop went to sleep / woke, where the peer reports it.
    var loopDetail: String
}

enum IdleCPUBenchmark {
    static let peers = [
        "RunLoopCore, mode with a far-future timer",
        "RunLoopCore, mode with an idle source",
        "Foundation RunLoop, far-future timer",
        "NIO EventLoop, nothing scheduled",
        "raw epoll_wait (floor)",
    ]

    static let staggerNanoseconds: UInt64 = 200_000_000

    static func run(_ configuration: IdleConfiguration) {
        progress("idle: \(peers.count) loops sleeping \(String(format1: Double(configuration.nanoseconds) / 1e9, digits: 1)) s at once")
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let results = (0..<peers.count).map { _ in Handoff<IdleResult?>(nil) }
        let duration = configuration.nanoseconds
        let eventLoop = group.next()
        let measurements: [@Sendable () -> IdleResult] = [
            { loopCore(duration, withTimer: true) },
            { loopCore(duration, withTimer: false) },
            { foundation(duration) },
            { nio(duration, on: eventLoop) },
            { raw(duration) },
        ]
        // Starts are staggered so that no two loops go to sleep or wake at the same moment: each one's single
        // wake-up then runs on a CPU of its own rather than alongside another peer's.
        let threads = measurements.enumerated().map { index, measure in
            BenchThread(name: "idle-\(index)") {
                sleepNanoseconds(UInt64(index) * staggerNanoseconds)
                results[index].value = measure()
            }
        }
        for thread in threads { thread.join() }
        report(results.map { $0.value! }, configuration)
    }

    // ===== peers =====

    static func loopCore(_ duration: UInt64, withTimer: Bool) -> IdleResult {
        let loop = Loop.current
        let mode = Loop.Mode("rlbench.idle")
        let timer = LoopTimer(after: .seconds(3_600)) { _ in }
        let source = LoopSource { }
        if withTimer { loop.add(timer, forMode: mode) } else { loop.add(source, forMode: mode) }
        let statisticsBefore = loop.statistics
        let before = ThreadUsage.now()
        let start = nowNanoseconds()
        let result = loop.run(mode: mode, timeout: .nanoseconds(Int64(duration)))
        let wall = nowNanoseconds() - start
        let usage = ThreadUsage.now() - before
        let statisticsAfter = loop.statistics
        timer.invalidate()
        source.invalidate()
        let wakeUps = Loop.WakeReason.allCases.compactMap { reason -> String? in
            let count = statisticsAfter.wakeUps(reason) - statisticsBefore.wakeUps(reason)
            return count == 0 ? nil : "\(reason) \(count)"
        }
        let detail = "sleeps \(statisticsAfter.sleeps - statisticsBefore.sleeps), wake-ups: \(wakeUps.joined(separator: ", ")), run → \(result)"
        return IdleResult(wallNanoseconds: wall, usage: usage, loopDetail: detail)
    }

    static func foundation(_ duration: UInt64) -> IdleResult {
        let runLoop = RunLoop.current
        let timer = Timer(fire: Date(timeIntervalSinceNow: 3_600), interval: 0, repeats: false) { _ in }
        runLoop.add(timer, forMode: .default)
        let before = ThreadUsage.now()
        let start = nowNanoseconds()
        let deadline = Date(timeIntervalSinceNow: Double(duration) / 1e9)
        // run(mode:before:) may return early (after a source); go round until the deadline has passed.
        var runs = 0
        while Date() < deadline {
            _ = runLoop.run(mode: .default, before: deadline)
            runs += 1
        }
        let wall = nowNanoseconds() - start
        let usage = ThreadUsage.now() - before
        timer.invalidate()
        return IdleResult(wallNanoseconds: wall, usage: usage, loopDetail: "run(mode:before:) calls \(runs)")
    }

    /// NIO's loop thread is not ours, so its usage is read by two tasks run on it, at the start and the end.
    static func nio(_ duration: UInt64, on eventLoop: any EventLoop) -> IdleResult {
        let before = try! eventLoop.submit { (ThreadUsage.now(), nowNanoseconds()) }.wait()
        sleepNanoseconds(duration)
        let after = try! eventLoop.submit { (ThreadUsage.now(), nowNanoseconds()) }.wait()
        return IdleResult(wallNanoseconds: after.1 - before.1, usage: after.0 - before.0,
                          loopDetail: "includes the two tasks that read the usage")
    }

    static func raw(_ duration: UInt64) -> IdleResult {
        let eventfd = cb_eventfd()
        let epoll = cb_epoll_watching(eventfd)
        defer {
            _ = cb_close(epoll)
            _ = cb_close(eventfd)
        }
        let before = ThreadUsage.now()
        let start = nowNanoseconds()
        while nowNanoseconds() - start < duration {
            let remaining = duration - (nowNanoseconds() - start)
            _ = cb_epoll_wait_one(epoll, Int32((remaining + 999_999) / 1_000_000))
        }
        let wall = nowNanoseconds() - start
        return IdleResult(wallNanoseconds: wall, usage: ThreadUsage.now() - before, loopDetail: "one epoll_wait with a timeout")
    }

    // ===== report =====

    static func report(_ results: [IdleResult], _ configuration: IdleConfiguration) {
        var table = Table("4a. Idle: CPU time of a loop sleeping \(String(format1: Double(configuration.nanoseconds) / 1e9, digits: 1)) s (getrusage RUSAGE_THREAD of the loop's thread)",
                          headers: ["peer", "wall", "CPU (user+sys)", "CPU/s", "vol. switches", "invol.", "detail"])
        for (index, name) in peers.enumerated() {
            let result = results[index]
            let perSecond = Double(result.usage.cpuNanoseconds) / (Double(result.wallNanoseconds) / 1e9)
            table.add([name, String(format1: Double(result.wallNanoseconds) / 1e9, digits: 3) + " s",
                       formatMicroseconds(Double(result.usage.cpuNanoseconds)), formatMicroseconds(perSecond),
                       "\(result.usage.voluntarySwitches)", "\(result.usage.involuntarySwitches)", result.loopDetail])
        }
        table.notes = ["  The kernel accounts thread CPU time in microseconds; 0 µs means below that resolution."]
        table.print()
    }
}
