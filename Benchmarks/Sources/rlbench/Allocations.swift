import CoreFoundation
import Glibc
import NIOCore
import NIOPosix
import RunLoopCore
#if canImport(MallocInterposerSwift)
import MallocInterposerSwift
#endif

// Benchmark 4b: heap allocations per loop iteration that has nothing to do.
//
// Allocations are counted by ordo-one/malloc-interposer, which replaces malloc and friends for the whole
// process. Linking its shared library is enough on Linux: it is a direct dependency of the executable listed
// before libc, so the dynamic linker binds every malloc in the process to it (no LD_PRELOAD needed). A self-check
// allocates a known number of objects first and refuses to report figures if they are not all counted.
//
// Counting covers every thread, so this runs after the other benchmarks have shut their threads down.

struct AllocationConfiguration {
    var iterations: Int
    var warmup = 1_000
}

struct AllocationResult {
    var iterations: Int
    var mallocs: Int
    var bytes: Int
    var frees: Int
}

#if canImport(MallocInterposerSwift)

enum AllocationBenchmark {
    static func run(_ configuration: AllocationConfiguration) {
        progress("allocations: self-check, then \(configuration.iterations) iterations per variant")
        let check = selfCheck()
        var table = Table("4b. Allocations per empty loop iteration (\(configuration.iterations) iterations after \(configuration.warmup) warm-up; every thread counted)",
                          headers: ["variant", "iterations", "mallocs", "mallocs/iteration", "bytes/iteration", "frees"])
        guard check.ok else {
            table.notes = ["  malloc counter self-check FAILED (\(check.detail)); no figures reported."]
            table.print()
            return
        }
        let rows: [(String, AllocationResult)] = [
            ("RunLoopCore: one run, a source that re-signals itself", loopCoreResignalling(configuration)),
            ("RunLoopCore: run(timeout: .zero), source present", loopCoreZeroTimeout(configuration)),
            // A sink and a stall threshold: the watch on every iteration (1 s: never passed), and a report of every
            // iteration as a stall to the sink (1 ns), its culprit's label included.
            ("RunLoopCore: re-signalling source, sink + stall watch", loopCoreResignalling(configuration, stallThreshold: .seconds(1))),
            ("RunLoopCore: re-signalling source, every iteration reported as a stall", loopCoreResignalling(configuration, stallThreshold: .nanoseconds(1))),
            ("Foundation: one CFRunLoopRunInMode, re-signalling source", foundationResignalling(configuration)),
            ("Foundation: CFRunLoopRunInMode(0 s), source present", foundationZeroTimeout(configuration)),
        ]
        // Not empty iterations, but where the throughput figures come from: what one cross-thread block costs
        // the heap, on both threads together.
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let submitRows: [(String, AllocationResult)] = [
            ("per block: RunLoopCore perform from another thread", perBlock(LoopCoreHost(name: "rlc-alloc"), configuration)),
            ("per block: Foundation perform+CFRunLoopWakeUp", perBlock(FoundationHost(name: "fnd-alloc"), configuration)),
            ("per block: NIO EventLoop.execute", perBlock(NIOHost(eventLoop: group.next()), configuration)),
        ]
        try? group.syncShutdownGracefully()
        for (name, result) in rows + submitRows {
            table.add([name, "\(result.iterations)", "\(result.mallocs)",
                       String(format1: Double(result.mallocs) / Double(result.iterations), digits: 3),
                       String(format1: Double(result.bytes) / Double(result.iterations), digits: 1), "\(result.frees)"])
        }
        table.notes = [
            "  Counter self-check: \(check.detail).",
            "  The run(timeout: .zero) variants include each run's Entry/Exit; the re-signalling variants are iterations of one run.",
            "  'per block' rows: \(configuration.iterations) no-op blocks submitted from another thread to a running loop; 'iterations' there are blocks.",
        ]
        table.print()
    }

    /// Counts the allocations of `body`.
    static func counting(iterations: Int, _ body: () -> Void) -> AllocationResult {
        MallocInterposerSwift.reset()
        MallocInterposerSwift.hook()
        body()
        MallocInterposerSwift.unhook()
        let statistics = MallocInterposerSwift.getStatistics()
        return AllocationResult(iterations: iterations, mallocs: statistics.mallocCount,
                                bytes: statistics.mallocBytesCount, frees: statistics.freeCount)
    }

    // ===== self-check =====

    final class Probe {
        var value = 0
    }

    @inline(never)
    static func makeProbe() -> Probe { Probe() }

    /// Allocates 1,000 class instances (one malloc each) and checks that the counter saw them.
    static func selfCheck() -> (ok: Bool, detail: String) {
        let count = 1_000
        var kept: [Probe] = []
        kept.reserveCapacity(count)
        kept.append(makeProbe())  // instantiates the class's metadata outside the counted region
        kept.removeAll(keepingCapacity: true)
        let result = counting(iterations: count) {
            for _ in 0..<count { kept.append(makeProbe()) }
        }
        let ok = result.mallocs >= count && result.mallocs <= count + 10
        return (ok, "\(count) objects allocated → \(result.mallocs) mallocs counted\(ok ? " (ok)" : "")")
    }

    // ===== RunLoopCore =====

    /// A source whose perform signals it again: every iteration performs it once and, having handled a
    /// source, polls instead of sleeping. The last perform stops the run.
    static func loopCoreResignalling(_ configuration: AllocationConfiguration, stallThreshold: Duration? = nil) -> AllocationResult {
        let result = Handoff<AllocationResult?>(nil)
        if stallThreshold != nil { LoopEventSink.install(LoopEventSink()) }
        Loop.stallThreshold = stallThreshold
        defer {
            Loop.stallThreshold = nil
            LoopEventSink.install(nil)
        }
        BenchThread.run(name: "rlc-alloc") {
            let loop = Loop.current
            // Touched on the loop's thread only; the perform handler is @Sendable like every loop handler.
            final class Countdown: @unchecked Sendable {
                var remaining = 0
                weak var source: LoopSource?
            }
            let countdown = Countdown()
            let source = LoopSource(label: "rlbench.resignal") {
                countdown.remaining -= 1
                if countdown.remaining > 0 { countdown.source?.signal() } else { Loop.current.stop() }
            }
            countdown.source = source
            loop.add(source, forMode: .default)
            func runOnce(_ iterations: Int) {
                countdown.remaining = iterations
                source.signal()
                loop.run(mode: .default, timeout: .seconds(600))
            }
            runOnce(configuration.warmup)
            let before = loop.statistics.iterations
            var counted = counting(iterations: configuration.iterations) { runOnce(configuration.iterations) }
            counted.iterations = Int(loop.statistics.iterations - before)
            source.invalidate()
            result.value = counted
        }
        return result.value!
    }

    static func loopCoreZeroTimeout(_ configuration: AllocationConfiguration) -> AllocationResult {
        let result = Handoff<AllocationResult?>(nil)
        BenchThread.run(name: "rlc-alloc") {
            let loop = Loop.current
            let source = LoopSource(label: "rlbench.present") {}
            loop.add(source, forMode: .default)
            for _ in 0..<configuration.warmup { loop.run(mode: .default, timeout: .zero) }
            result.value = counting(iterations: configuration.iterations) {
                for _ in 0..<configuration.iterations { loop.run(mode: .default, timeout: .zero) }
            }
            source.invalidate()
        }
        return result.value!
    }

    // ===== cross-thread blocks =====

    /// Submits blocks from this thread to a running loop and counts the allocations of both threads until the
    /// loop has run them all.
    static func perBlock(_ target: any BlockTarget, _ configuration: AllocationConfiguration) -> AllocationResult {
        defer { target.finish() }
        func submitAndWait(_ blocks: Int) {
            Executed.count.store(0, ordering: .relaxed)
            for _ in 0..<blocks { target.submit(countingBlock) }
            while Executed.count.load(ordering: .relaxed) < blocks { sched_yield() }
        }
        submitAndWait(configuration.warmup)
        return counting(iterations: configuration.iterations) { submitAndWait(configuration.iterations) }
    }

    // ===== Foundation (CoreFoundation's run loop, which Foundation's RunLoop is built on) =====

    /// A version-0 CFRunLoopSource whose perform callout counts down and signals it again.
    final class CFCountdown {
        var remaining = 0
        var source: CFRunLoopSource?
    }

    static func makeCFSource(_ countdown: CFCountdown) -> CFRunLoopSource {
        var context = CFRunLoopSourceContext(
            version: 0, info: Unmanaged.passUnretained(countdown).toOpaque(),
            retain: nil, release: nil, copyDescription: nil, equal: nil, hash: nil, schedule: nil, cancel: nil,
            perform: { info in
                let countdown = Unmanaged<CFCountdown>.fromOpaque(info!).takeUnretainedValue()
                countdown.remaining -= 1
                if countdown.remaining > 0 {
                    CFRunLoopSourceSignal(countdown.source)
                } else {
                    CFRunLoopStop(CFRunLoopGetCurrent())
                }
            })
        return CFRunLoopSourceCreate(nil, 0, &context)
    }

    static func foundationResignalling(_ configuration: AllocationConfiguration) -> AllocationResult {
        let result = Handoff<AllocationResult?>(nil)
        BenchThread.run(name: "fnd-alloc") {
            let countdown = CFCountdown()
            let source = makeCFSource(countdown)
            countdown.source = source
            let runLoop = CFRunLoopGetCurrent()
            CFRunLoopAddSource(runLoop, source, kCFRunLoopDefaultMode)
            func runOnce(_ iterations: Int) {
                countdown.remaining = iterations
                CFRunLoopSourceSignal(source)
                _ = CFRunLoopRunInMode(kCFRunLoopDefaultMode, 600, false)
            }
            runOnce(configuration.warmup)
            result.value = counting(iterations: configuration.iterations) { runOnce(configuration.iterations) }
            CFRunLoopSourceInvalidate(source)
            countdown.source = nil
        }
        return result.value!
    }

    static func foundationZeroTimeout(_ configuration: AllocationConfiguration) -> AllocationResult {
        let result = Handoff<AllocationResult?>(nil)
        BenchThread.run(name: "fnd-alloc") {
            let countdown = CFCountdown()
            let source = makeCFSource(countdown)
            CFRunLoopAddSource(CFRunLoopGetCurrent(), source, kCFRunLoopDefaultMode)
            for _ in 0..<configuration.warmup { _ = CFRunLoopRunInMode(kCFRunLoopDefaultMode, 0, false) }
            result.value = counting(iterations: configuration.iterations) {
                for _ in 0..<configuration.iterations { _ = CFRunLoopRunInMode(kCFRunLoopDefaultMode, 0, false) }
            }
            CFRunLoopSourceInvalidate(source)
        }
        return result.value!
    }
}

#else

enum AllocationBenchmark {
    static func run(_ configuration: AllocationConfiguration) {
        var table = Table("4b. Allocations per empty loop iteration", headers: ["variant", "mallocs/iteration"])
        table.notes = ["  Built without the malloc interposer (RLBENCH_NO_MALLOC_COUNTER was set); not measured."]
        table.print()
    }
}

#endif
