// foundation-timer-app: a Foundation RunLoop program, the kind ported from Apple platforms, traced by the
// Foundation adapter in one line.
//
//     swift build -c release
//     rlctl record -- .build/release/foundation-timer-app --duration 2s
//
// The main RunLoop serves a 10 ms "frame" timer (a little work each time) and a 100 ms "tick" timer; every
// `--stall-every`th tick blocks the loop for 80 ms (the stall the summary should point at).
import Foundation
import Glibc
import RunLoopFoundation
import TraceModel

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("foundation-timer-app: \(message)\n".utf8))
    exit(2)
}

let usage = "usage: foundation-timer-app [--duration D (default 3s)] [--stall-every N ticks of 100 ms (default 10)]"
var duration: Int64 = 3_000_000_000
var stallEvery = 10
var arguments = CommandLine.arguments.dropFirst()
while let flag = arguments.popFirst() {
    guard let value = arguments.popFirst(), flag == "--duration" || flag == "--stall-every" else {
        fail(flag.hasPrefix("--") && ["--duration", "--stall-every"].contains(flag) ? "\(flag) needs a value; \(usage)"
                                                                                     : "unknown argument '\(flag)'; \(usage)")
    }
    if flag == "--duration" {
        do { duration = try DurationText.nanoseconds(value) } catch { fail("--duration: \(error)") }
        guard duration > 0 else { fail("--duration must be more than 0") }
    } else {
        guard let count = Int(value), count > 0 else { fail("--stall-every takes a whole number above 0, not '\(value)'") }
        stallEvery = count
    }
}

let stallPeriod = stallEvery

// The one line: traces the main RunLoop with the tracer `rlctl record` chose (nothing outside rlctl).
let tracing = try FoundationLoopTracing.attach(to: .main)

/// Spends CPU time on the calling thread, like real work.
func burn(microseconds: Int) {
    let end = Date(timeIntervalSinceNow: Double(microseconds) / 1e6)
    while Date() < end {}
}

/// Counts kept by timers that all run on the main thread (Timer handlers are @Sendable).
final class Counts: @unchecked Sendable {
    var frames = 0
    var ticks = 0
    var stalls = 0
}
let counts = Counts()

let frame = Timer(timeInterval: 0.010, repeats: true) { _ in
    counts.frames += 1
    burn(microseconds: 300)
}
let tick = Timer(timeInterval: 0.100, repeats: true) { _ in
    counts.ticks += 1
    if counts.ticks % stallPeriod == 0 {
        counts.stalls += 1
        usleep(80_000)                                 // the blocking callout: the loop does nothing else meanwhile
    }
}
RunLoop.main.add(frame, forMode: .common)
RunLoop.main.add(tick, forMode: .default)

RunLoop.main.run(until: Date(timeIntervalSinceNow: Double(duration) / 1e9))
tracing.detach()
print("foundation-timer-app: \(counts.frames) frames, \(counts.ticks) ticks, \(counts.stalls) stalls of 80 ms")
