// The kernel recorder as a process of its own, for KernelTracingTests and Benchmarks/kernel-view-bench.sh:
//   kernel-recorder-fixture                 follows itself and sleeps until killed: the tests SIGKILL it and check
//                                           that nothing it loaded stays in the kernel; prints "ready" once attached
//   kernel-recorder-fixture follow PID     follows running process PID until it ends, then prints the counts
//   kernel-recorder-fixture record [--ring BYTES] -- PROGRAM ARGS…
//                                           starts PROGRAM with the recorder attached, follows it to its end, and
//                                           prints "kernel view: N records, M lost, E events" on stderr
// "unavailable: WHY" and status 1 when the kernel view cannot run.
import Foundation
import KernelTracing
import Synchronization

let arguments = Array(CommandLine.arguments.dropFirst())
do {
    if arguments.first == "follow", arguments.count == 2, let pid = Int32(arguments[1]) {
        let events = Mutex(0)
        let recorder = try KernelRecorder { batch in events.withLock { $0 += batch.count } }
        try recorder.follow(process: pid)
        while kill(pid, 0) == 0 { usleep(50_000) }
        let statistics = recorder.stop()
        FileHandle.standardError.write(Data(
            "kernel view: \(statistics.records) records, \(statistics.lost) lost (\(statistics.ringFull) to a full ring, \(statistics.untracked) untracked), \(statistics.rebuilt) rebuilt, \(events.withLock { $0 }) events\n".utf8))
        exit(0)
    }
    if arguments.first == "record" {
        var options = KernelRecorder.Options()
        var rest = arguments.dropFirst()
        if rest.first == "--ring", rest.count > 1, let bytes = UInt32(rest[rest.index(after: rest.startIndex)]) {
            options.ringBytes = bytes
            rest = rest.dropFirst(2)
        }
        if rest.first == "--" { rest = rest.dropFirst() }
        guard let program = rest.first else {
            FileHandle.standardError.write(Data("usage: kernel-recorder-fixture record [--ring BYTES] -- PROGRAM ARGS…\n".utf8))
            exit(2)
        }
        let events = Mutex(0)
        let recorder = try KernelRecorder(options: options) { batch in events.withLock { $0 += batch.count } }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = Array(rest.dropFirst())
        try process.run()
        try recorder.follow(process: process.processIdentifier)
        process.waitUntilExit()
        let statistics = recorder.stop()
        FileHandle.standardError.write(Data(
            "kernel view: \(statistics.records) records, \(statistics.lost) lost (\(statistics.ringFull) to a full ring, \(statistics.untracked) untracked), \(statistics.rebuilt) rebuilt, \(events.withLock { $0 }) events\n".utf8))
        exit(process.terminationStatus)
    }
    let recorder = try KernelRecorder { _ in }
    try recorder.follow(process: getpid())
    // Unbuffered, so that the test sees it while this process sleeps.
    FileHandle.standardOutput.write(Data("ready\n".utf8))
    while true { sleep(60) }
} catch {
    print("unavailable: \(error)")
    exit(1)
}
