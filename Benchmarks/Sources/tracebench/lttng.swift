import Foundation
import Glibc
import RunLoopCore
import Tracing

/// Runs the lttng CLI quietly; true on success.
@discardableResult
func lttng(_ arguments: [String]) -> Bool {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/lttng")
    process.arguments = arguments
    process.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
    process.standardError = FileHandle(forWritingAtPath: "/dev/null")
    guard (try? process.run()) != nil else { return false }
    process.waitUntilExit()
    return process.terminationStatus == 0
}

nonisolated(unsafe) var lttngNotes: [String] = []

/// The LTTng sink's cost with no session enabling its events, and with one that does (events counted back).
func lttngPeers(context: @escaping (UInt64) -> LoopEventSink.Context,
                measure: @escaping (Int, (UInt64) -> Void) -> Double) -> [Peer] {
    guard LTTngSink.isCompiledIn else {
        lttngNotes.append("LTTng: this build has no provider (liblttng-ust-dev missing at build time): LTTng rows left out")
        return []
    }
    let sink = LTTngSink()
    var peers = [Peer(name: "LTTng sink, no session enabled") { count in
        measure(count) { i in sink.activity(.beforeTimers, context(i)) }
    }]
    guard access("/usr/bin/lttng", X_OK) == 0 else {
        lttngNotes.append("LTTng: lttng-tools missing: the enabled-session row is left out")
        return peers
    }
    if !lttng(["list"]) { _ = system("lttng-sessiond --daemonize >/dev/null 2>&1") }
    peers.append(Peer(name: "LTTng sink, session enabled (runloop:*)") { count in
        let name = "tracebench-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let output = NSTemporaryDirectory() + name
        guard lttng(["create", name, "--output=\(output)"]),
              lttng(["enable-channel", "-u", "big", "-s", name, "--subbuf-size=4M", "--num-subbuf=8"]),
              lttng(["enable-event", "-u", "runloop:*", "-s", name, "-c", "big"]),
              lttng(["start", name]) else {
            lttngNotes.append("LTTng: could not set up a session (is lttng-sessiond running?)")
            return .nan
        }
        let ns = measure(count) { i in sink.activity(.beforeTimers, context(i)) }
        lttng(["stop", name])
        lttng(["destroy", name])
        if var reader = try? CTFTraceReader(path: output) {
            var read = 0
            while (try? reader.next()) != nil { read += 1 }
            lttngNotes.append("LTTng session round: \(read) of \(count) events in the trace, \(reader.health.eventsLost) discarded")
        }
        try? FileManager.default.removeItem(atPath: output)
        return ns
    })
    return peers
}

func printLTTngNotes() {
    for note in lttngNotes { print("  " + note) }
}
