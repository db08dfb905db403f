// foundationbench: what the Foundation adapter (RunLoopFoundation) costs a Foundation RunLoop per iteration.
//
//   swift run -c release --package-path Benchmarks foundationbench [--iterations N] [--rounds R]
//
// The measured loop is a RunLoop on a thread of its own whose default mode holds one timer far in the future
// (a mode with nothing in it finishes at once and never iterates). Each `run(mode: .default, before:
// .distantPast)` is one polling iteration: CF calls the observers for entry, beforeTimers, beforeSources and
// exit, checks its sources and timers, and returns. That is the adapter's worst case: four observer callouts
// (and, with a sink, one mode re-scan at the entry) for the least work a CF iteration can do. The configurations
// run in interleaved rounds, rotating the order each round; the table shows the median over rounds of the
// measuring thread's CPU time per iteration (CLOCK_THREAD_CPUTIME_ID: the cost, without other processes' turns).
import Foundation
import Glibc
import RunLoopCore
import RunLoopFoundation
import Tracing

var iterations = 200_000
var rounds = 5
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let argument = arguments.next() {
    switch argument {
    case "--iterations": iterations = Int(arguments.next() ?? "") ?? 0
    case "--rounds": rounds = Int(arguments.next() ?? "") ?? 0
    default:
        FileHandle.standardError.write(Data("foundationbench: unknown argument '\(argument)'\n".utf8))
        exit(2)
    }
}
guard iterations > 0, rounds > 0 else {
    FileHandle.standardError.write(Data("foundationbench: --iterations and --rounds take whole numbers above 0\n".utf8))
    exit(2)
}
let iterationCount = iterations

enum Configuration: String, CaseIterable {
    case bare = "RunLoop without the adapter"
    case emptyObserver = "a CF observer of all activities, empty C callback (CF's share)"
    case attachedNoSink = "adapter attached, no sink installed"
    case attachedEmptySink = "adapter attached, empty LoopEventSink (callout + dispatch floor)"
    case attachedRecorder = "adapter attached, embedded recorder recording"
}

/// CF's own cost of an observer callout, without the adapter: the CoreFoundation functions libFoundation.so
/// exports, looked up at run time (the adapter's declarations are in a target the package does not export).
enum BareObserver {
    typealias Callback = @convention(c) (OpaquePointer?, UInt, UnsafeMutableRawPointer?) -> Void
    typealias Create = @convention(c) (UnsafeRawPointer?, UInt, UInt8, Int, Callback, UnsafeRawPointer?) -> OpaquePointer?
    typealias Add = @convention(c) (OpaquePointer?, OpaquePointer?, UnsafeRawPointer?) -> Void
    typealias GetCurrent = @convention(c) () -> OpaquePointer?
    typealias Invalidate = @convention(c) (OpaquePointer?) -> Void

    static func symbol<T>(_ name: String, as type: T.Type) -> T {
        guard let address = dlsym(dlopen(nil, RTLD_NOW), name) else { fatalError("foundationbench: no \(name) in this process") }
        return unsafeBitCast(address, to: type)
    }

    /// Adds an observer with an empty callback to the current loop's common modes; returns a detach function.
    static func attach() -> () -> Void {
        let observer = symbol("CFRunLoopObserverCreate", as: Create.self)(nil, 0x0FFF_FFFF, 1, 0, { _, _, _ in }, nil)
        let loop = symbol("CFRunLoopGetCurrent", as: GetCurrent.self)()
        // The common-modes token is the address of the constant string libFoundation.so exports.
        symbol("CFRunLoopAddObserver", as: Add.self)(loop, observer, dlsym(dlopen(nil, RTLD_NOW), "__kCFRunLoopCommonModes"))
        return { symbol("CFRunLoopObserverInvalidate", as: Invalidate.self)(observer) }
    }
}

/// The calling thread's CPU time: on a shared machine, wall time also counts the other processes' turns.
@Sendable func threadCPUNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}

/// ns per iteration of `configuration`, measured on a new thread with a new RunLoop.
func measure(_ configuration: Configuration) -> Double {
    final class Box: @unchecked Sendable { var nanoseconds = 0.0 }
    let result = Box()
    let done = DispatchSemaphore(value: 0)
    let thread = Thread {
        let keepAlive = Timer(fire: .distantFuture, interval: 0, repeats: false) { _ in }
        RunLoop.current.add(keepAlive, forMode: .default)
        var recording: Recording?
        switch configuration {
        case .bare, .emptyObserver, .attachedNoSink: LoopEventSink.install(nil)
        case .attachedEmptySink: LoopEventSink.install(LoopEventSink())
        case .attachedRecorder:
            recording = try! Recording.start(.embedded(), into: NSTemporaryDirectory() + "foundationbench-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        }
        let attachment = configuration == .bare || configuration == .emptyObserver
            ? nil : try! FoundationLoopTracing.attach(to: .current, name: "bench")
        let detachEmptyObserver = configuration == .emptyObserver ? BareObserver.attach() : nil
        for _ in 0..<1_000 { _ = RunLoop.current.run(mode: .default, before: .distantPast) }   // warm-up
        let start = threadCPUNanoseconds()
        for _ in 0..<iterationCount { _ = RunLoop.current.run(mode: .default, before: .distantPast) }
        let elapsed = threadCPUNanoseconds() - start
        attachment?.detach()
        detachEmptyObserver?()
        if let recording {
            let outcome = try! recording.stop()
            if let summary = outcome.recorder, summary.eventsLost > 0 {
                FileHandle.standardError.write(Data("foundationbench: the recorder lost \(summary.eventsLost) events\n".utf8))
            }
            if let folder = outcome.folder { try? FileManager.default.removeItem(atPath: folder) }
        }
        LoopEventSink.install(nil)
        keepAlive.invalidate()
        result.nanoseconds = Double(elapsed) / Double(iterationCount)
        done.signal()
    }
    thread.start()
    done.wait()
    return result.nanoseconds
}

#if DEBUG
print("foundationbench: DEBUG BUILD, the figures mean nothing (use -c release)")
#endif
print("foundationbench — thread CPU ns per RunLoop iteration (run(mode:before: .distantPast), 4 activities), median of \(rounds) interleaved rounds × \(iterations) iterations")
var results: [Configuration: [Double]] = [:]
let all = Configuration.allCases
for round in 0..<rounds {
    for offset in 0..<all.count {
        let configuration = all[(offset + round) % all.count]
        results[configuration, default: []].append(measure(configuration))
    }
}
func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}
let baseline = median(results[.bare]!)
for configuration in all {
    let values = results[configuration]!
    let value = median(values)
    let rounds = values.map { String(format: "%.0f", $0) }.joined(separator: " ")
    let label = configuration.rawValue.padding(toLength: 68, withPad: " ", startingAt: 0)
    print(label + String(format: " %7.0f ns  ×%.2f  %+6.0f ns   rounds: ", value, value / baseline, value - baseline) + rounds)
}
