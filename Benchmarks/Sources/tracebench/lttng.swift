import CTraceBaseline
import Foundation
import Glibc
import RunLoopCore
import TraceReading
import Tracing

// The LTTng rows: LTTngSink (the Swift path a loop takes) next to a C baseline that calls the same `runloop`
// tracepoints with lttng_ust_tracepoint() (CTraceBaseline, built by the same compiler in the same release build:
// its own call sites, bound to the probes of the librunloop-lttng-provider.so that LTTngSink loads). Both emit the same event with the
// same fields, without a session and with one enabling `runloop:*`. Every enabled round's trace is read back: it
// must hold every event, with the right fields, and LTTng must report nothing discarded, or the figures are
// marked as not comparable.

/// Runs the lttng CLI (Tracing's LTTngTools: time limit, no daemon spawned by the client); true on success.
@discardableResult
func lttng(_ arguments: [String]) -> Bool {
    (try? LTTngTools.lttng(arguments)) != nil
}

/// Polls `condition` every 5 ms for up to `seconds`; whether it became true.
func wait(seconds: Double, until condition: () -> Bool) -> Bool {
    let deadline = Loop.Instant.now.nanoseconds + UInt64(seconds * 1e9)
    while !condition() {
        if Loop.Instant.now.nanoseconds > deadline { return false }
        usleep(5_000)
    }
    return true
}

nonisolated(unsafe) var lttngNotes: [String] = []

/// What one row's rounds wrote and what its traces held.
struct RoundTally {
    var rounds = 0
    var failedSetups = 0
    /// Rounds of a no-session row during which some session enabled `runloop` events in this process anyway.
    var disturbed = 0
    var expected: UInt64 = 0
    var read: UInt64 = 0
    var discarded: UInt64 = 0
    var packetsLost: UInt64 = 0
    /// Events whose loop id, mode, depth or iteration order differ from what was emitted.
    var wrongFields: UInt64 = 0
    var readErrors: [String] = []

    var complete: Bool {
        failedSetups == 0 && readErrors.isEmpty && read == expected && discarded == 0 && packetsLost == 0 && wrongFields == 0
    }
}

nonisolated(unsafe) var tallies: [PeerID: RoundTally] = [:]

/// A no-session round: `emit` must run while no session enables the event, which is checked before and after.
func disabledRound(_ row: PeerID, _ count: Int, _ emit: () -> Void) -> Double {
    // A session destroyed just before (the previous round's) disables the tracepoints asynchronously.
    _ = wait(seconds: 5) { LTTngSink.enabledEventCount == 0 }
    let quietBefore = !LTTngSink.isEnabled(.beforeTimers)
    let ns = nanosecondsPerEvent(count, emit)
    tallies[row, default: RoundTally()].rounds += 1
    if !quietBefore || LTTngSink.isEnabled(.beforeTimers) { tallies[row, default: RoundTally()].disturbed += 1 }
    return ns
}

/// The loop ids the two paths use in a shared session, to tell their events apart.
let swiftLoopID: UInt64 = 1, cLoopID: UInt64 = 2

/// An enabled-session round, the two paths side by side in the same session: a session of its own tracing
/// this process only, one channel big enough for the round, `runloop:*` enabled. Once this process's
/// tracepoints are enabled, the Swift path and the C baseline emit `count` events each, in alternating chunks
/// (the round's parity picks who starts), so that both meet the same consumer daemon and buffer state. Then the
/// trace is read back and each path's events are checked. Returns [Swift ns/event, C ns/event].
func sessionRound(_ sink: LoopEventSink, _ count: Int, round: Int) -> [Double] {
    var swift = tallies[.swiftEnabled, default: RoundTally()]
    var c = tallies[.cEnabled, default: RoundTally()]
    defer {
        tallies[.swiftEnabled] = swift
        tallies[.cEnabled] = c
    }
    swift.rounds += 1
    c.rounds += 1
    let name = "tracebench-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    let output = NSTemporaryDirectory() + name
    defer { try? FileManager.default.removeItem(atPath: output) }
    // So that "enabled" below means this session, not the previous round's being torn down.
    _ = wait(seconds: 5) { LTTngSink.enabledEventCount == 0 }
    guard lttng(["create", name, "--output=\(output)"]) else {
        swift.failedSetups += 1
        c.failedSetups += 1
        return [.nan, .nan]
    }
    guard lttng(["enable-channel", "--userspace", "--session=\(name)", "--subbuf-size=8M", "--num-subbuf=8", "big"]),
          lttng(["track", "--userspace", "--vpid=\(getpid())", "--session=\(name)"]),
          lttng(["enable-event", "--userspace", "runloop:*", "--session=\(name)", "--channel=big"]),
          lttng(["start", name]),
          wait(seconds: 20, until: { LTTngSink.isEnabled(.beforeTimers) }) else {
        lttng(["destroy", name])
        swift.failedSetups += 1
        c.failedSetups += 1
        return [.nan, .nan]
    }
    let chunks = 10
    var swiftNanoseconds = 0.0, cNanoseconds = 0.0
    var swiftChunks = 0, cChunks = 0
    /// Where chunk `k` of a path starts; chunk k holds events start(k)..<start(k + 1).
    func start(_ k: Int) -> Int { count * k / chunks }
    for chunk in 0..<2 * chunks {
        if (chunk + round) % 2 == 0 {
            let first = start(swiftChunks), n = start(swiftChunks + 1) - first
            swiftNanoseconds += nanosecondsPerEvent(1) { emitActivities(sink, n, loopID: swiftLoopID, from: UInt64(first)) }
            swiftChunks += 1
        } else {
            let first = start(cChunks), n = start(cChunks + 1) - first
            cNanoseconds += nanosecondsPerEvent(1) { tbc_before_timers_loop(cLoopID, modeName, UInt64(first), UInt64(n)) }
            cChunks += 1
        }
    }
    let swiftDone = start(swiftChunks), cDone = start(cChunks)
    lttng(["stop", name])      // waits until the trace on disk is complete
    lttng(["destroy", name])
    swift.expected += UInt64(swiftDone)
    c.expected += UInt64(cDone)
    let mode = String(cString: modeName)
    do {
        let reader = try CTFTraceReader(path: output)
        var next: [UInt64: UInt64] = [swiftLoopID: 0, cLoopID: 0]
        var stray: UInt64 = 0
        while let event = try reader.next() {
            guard case .activity(.beforeTimers, let place) = event.payload, let expected = next[place.loopID] else {
                stray += 1
                continue
            }
            let ok = place.depth == 1 && place.mode == mode && place.iteration >= expected
            if ok { next[place.loopID] = place.iteration + 1 }
            if place.loopID == swiftLoopID {
                swift.read += 1
                if !ok { swift.wrongFields += 1 }
            } else {
                c.read += 1
                if !ok { c.wrongFields += 1 }
            }
        }
        // Events of neither path cannot be told apart: they count against both.
        swift.wrongFields += stray
        c.wrongFields += stray
        // LTTng counts discards per channel, not per path: they too count against both.
        swift.discarded += reader.health.eventsLost
        c.discarded += reader.health.eventsLost
        swift.packetsLost += reader.health.packetsLost
        c.packetsLost += reader.health.packetsLost
    } catch {
        swift.readErrors.append("\(error)")
        c.readErrors.append("\(error)")
    }
    return [swiftNanoseconds / Double(swiftDone), cNanoseconds / Double(cDone)]
}

/// The LTTng rows, or none (with a note) when this build or machine cannot run them.
func lttngPeers() -> [Peer] {
    guard LTTngSink.isCompiledIn, tbc_compiled_in() != 0 else {
        lttngNotes.append("LTTng: this build has no provider (liblttng-ust-dev missing at build time, or RLCTL_DISABLE_LTTNG set): LTTng rows left out")
        return []
    }
    let sink = LTTngSink()
    var peers = [
        Peer(.swiftDisabled, scale: 10) { count in
            disabledRound(.swiftDisabled, count) { emitActivities(sink, count) }
        },
        Peer(.cDisabled, scale: 10) { count in
            disabledRound(.cDisabled, count) { tbc_before_timers_loop(cLoopID, modeName, 0, UInt64(count)) }
        },
    ]
    guard (try? LTTngTools.requireInstalled()) != nil else {
        lttngNotes.append("LTTng: lttng-tools missing: the enabled-session rows are left out")
        return peers
    }
    _ = try? LTTngTools.ensureSessionDaemon()
    var round = 0
    peers.append(Peer(rows: [.swiftEnabled, .cEnabled]) { count in
        round += 1
        return sessionRound(sink, count, round: round)
    })
    return peers
}

func printLTTngReport(medians: [PeerID: Double], results: [PeerID: [Double]]) {
    for note in lttngNotes { print("  " + note) }
    guard let swiftOff = medians[.swiftDisabled], let cOff = medians[.cDisabled] else { return }
    print("\nLTTng: the Swift path (LTTngSink through LoopEventSink) against C calling the same tracepoints")
    for row in [PeerID.swiftDisabled, .cDisabled] {
        let tally = tallies[row, default: RoundTally()]
        print("  \(row.rawValue): \(tally.rounds) rounds" + (tally.disturbed > 0
            ? ", \(tally.disturbed) of them with a session enabling runloop events (figure invalid)" : ", no session enabled"))
    }
    for row in [PeerID.swiftEnabled, .cEnabled] {
        guard let tally = tallies[row] else { continue }
        var line = "  \(row.rawValue): \(tally.rounds) sessions (shared with the other path), \(tally.read) of \(tally.expected) events read back, "
            + "\(tally.discarded) discarded, \(tally.packetsLost) packets lost, \(tally.wrongFields) with wrong fields"
        if tally.failedSetups > 0 { line += ", \(tally.failedSetups) sessions could not be set up (is lttng-sessiond running as root?)" }
        print(line)
        for error in tally.readErrors { print("    read error: \(error)") }
    }
    let floor = medians[.emptySink] ?? .nan
    let disabledClean = [PeerID.swiftDisabled, .cDisabled].allSatisfy { tallies[$0, default: RoundTally()].disturbed == 0 }
    print(String(format: "  Swift path disabled: %.2f ns/event (C baseline %.2f ns; %.2f ns above the empty-sink floor of %.2f ns)",
                 swiftOff, cOff, swiftOff - floor, floor))
    print("    goal < 2 ns: " + (!disabledClean ? "NOT COMPARABLE (a session was enabled)" : swiftOff < 2 ? "MET" : "NOT MET"))
    guard let swiftOn = medians[.swiftEnabled], let cOn = medians[.cEnabled] else { return }
    let enabledClean = [PeerID.swiftEnabled, .cEnabled].allSatisfy { tallies[$0]?.complete ?? false }
    // Both paths run in the same sessions, so each round gives a paired ratio; the verdict uses their median.
    let pairedRatios = zip(results[.swiftEnabled] ?? [], results[.cEnabled] ?? []).map { $0 / $1 }
    let ratio = median(pairedRatios)
    print(String(format: "  Swift path enabled ÷ C baseline enabled: median of the rounds' ratios %.3f× (rounds %@); ratio of the medians %.2f ns ÷ %.2f ns = %.3f×",
                 ratio, pairedRatios.map { String(format: "%.3f", $0) }.joined(separator: " "), swiftOn, cOn, swiftOn / cOn))
    print("    goal ≤ 1.2×: " + (!enabledClean ? "NOT COMPARABLE (events missing, discarded or wrong; see above)" : ratio <= 1.2 ? "MET" : "NOT MET"))
}
