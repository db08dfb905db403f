import Foundation
import Glibc
import Testing
import TestSupport
import TraceModel
import TraceReading

/// `rlctl top` (issue 15, item 3) on a relay daemon of the test's own: a program streaming to it with `rlctl
/// record --relayd` shows as a row with its figures over the last interval, and drops out when it ends.
@Suite(.serialized, .enabled(if: LTTngCLIEnvironment.shouldRun, LTTngCLIEnvironment.skipComment))
struct TopTests {
    static func rows(_ output: ProcessOutput) throws -> (sessions: Int, loops: [[String: Any]]) {
        let document = try #require(try JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [String: Any], "\(output.stdout)\(output.stderr)")
        return (document["sessions"] as? Int ?? -1, document["loops"] as? [[String: Any]] ?? [])
    }

    /// Waits (bounded) until the relay lists a session with streams.
    static func waitUntilStreaming(_ relay: LocalRelayDaemon, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while try LiveSessions.list(relay: relay.liveURL).first.map({ $0.streams == 0 }) ?? true {
            try #require(ContinuousClock.now < deadline, "no session streams to the relay daemon", sourceLocation: sourceLocation)
            usleep(100_000)
        }
    }

    @Test func aRecordedProgramShowsAsARowWhileItRuns() throws {
        guard LTTngCLIEnvironment.requirement.requireMet() else { return }
        let relay = try LocalRelayDaemon()
        defer { relay.stop(); relay.removeOutput() }
        let empty = try CLI.run(["top", "--relayd", relay.liveURL, "--once", "--interval", "200ms"])
        #expect(empty.status == 0, "\(empty.stderr)")
        #expect(empty.stdout.contains("(no live session on the relay daemon)"), "\(empty.stdout)")

        // runloop-demo: about 700 iterations a second, 24 ms burned in every 20th 60 Hz frame. It runs until the
        // views below are done (SIGTERM, passed on by record): a fixed duration ran out on a loaded CI machine.
        let recording = try CLI.start(["record", "--relayd", relay.recordURL, "--", CLI.sibling("runloop-demo"), "120"])
        // Once its session streams (record's set-up can take seconds on a loaded machine), and a moment more for
        // the first live packets.
        try Self.waitUntilStreaming(relay)
        usleep(500_000)
        let shown = try CLI.run(["top", "--relayd", relay.liveURL, "--once", "--format", "json", "--stall", "20ms"])
        #expect(shown.status == 0, "\(shown.stderr)")
        let (sessions, loops) = try Self.rows(shown)
        #expect(sessions == 1)
        let loop = try #require(loops.first, "\(shown.stdout)")
        #expect(loops.count == 1)
        #expect(loop["kind"] as? String == "RunLoopCore")
        #expect(!(loop["host"] as? String ?? "").isEmpty)
        #expect((loop["processID"] as? Int ?? 0) > 0, "record --relayd sessions carry vpid")
        #expect((loop["threadID"] as? Int ?? 0) > 0)
        let iterations = loop["iterationsPerSecond"] as? Double ?? 0
        #expect(iterations > 200 && iterations < 5_000, "\(loop)")
        let utilization = loop["utilization"] as? Double ?? 0
        #expect(utilization > 0.01 && utilization < 0.6, "\(loop)")
        #expect((loop["worstStallNanoseconds"] as? Int ?? 0) >= 20_000_000, "every 20th frame burns 24 ms: \(loop)")
        #expect(loop["lostEvents"] as? Int == 0)

        let text = try CLI.run(["top", "--relayd", relay.liveURL, "--once", "--sort", "stall"])
        let lines = text.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first?.hasPrefix("rlctl top — \(relay.liveURL), 1 session(s), 1 loop(s), every 1s, sorted by stall") == true, "\(text.stdout)")
        #expect(lines.count == 3 && lines[1].hasPrefix("host ") && lines[2].contains("RunLoopCore"), "\(text.stdout)")

        recording.send(SIGTERM)
        let ended = recording.wait()
        #expect(ended.stderr.contains("killed by signal 15"), "\(ended.termination): \(ended.stderr)")
        let after = try CLI.run(["top", "--relayd", relay.liveURL, "--once", "--format", "json", "--interval", "300ms"])
        #expect(try Self.rows(after).loops.isEmpty, "the program ended: \(after.stdout)")
    }

    /// A relay daemon lets one viewer follow a session: a second `rlctl top` says the session is followed by
    /// another viewer (it showed "no live session" before), and shows it once the first has quit.
    @Test func aSessionAnotherViewerFollowsIsSaidAndShownOnceFree() throws {
        guard LTTngCLIEnvironment.requirement.requireMet() else { return }
        let relay = try LocalRelayDaemon()
        defer { relay.stop(); relay.removeOutput() }
        let recording = try CLI.start(["record", "--relayd", relay.recordURL, "--", CLI.sibling("runloop-demo"), "120"])
        defer { recording.send(SIGTERM); _ = recording.wait() }
        try Self.waitUntilStreaming(relay)
        let deadline = ContinuousClock.now + .seconds(30)
        func listed() throws -> [LiveSession] { try LiveSessions.list(relay: relay.liveURL) }
        let first = try CLI.start(["top", "--relayd", relay.liveURL], timeout: .seconds(60))
        while try listed().first?.clients != 1, ContinuousClock.now < deadline { usleep(100_000) }
        let name = try #require(try listed().first?.name)

        let second = try CLI.run(["top", "--relayd", relay.liveURL, "--once", "--format", "json", "--interval", "200ms"])
        #expect(second.status == 0, "\(second.stderr)")
        let document = try #require(try JSONSerialization.jsonObject(with: Data(second.stdout.utf8)) as? [String: Any])
        #expect(document["sessions"] as? Int == 0 && (document["loops"] as? [Any])?.isEmpty == true, "\(second.stdout)")
        #expect(document["notShown"] as? [String] == ["\(name) on \(HostName.local): another viewer follows it (a relay daemon lets one viewer follow a session at a time)"],
                "\(second.stdout)")

        first.send(SIGINT)
        _ = first.wait()
        let freed = try CLI.run(["top", "--relayd", relay.liveURL, "--once", "--format", "json"])
        let (sessions, loops) = try Self.rows(freed)
        #expect(sessions == 1 && loops.count == 1, "\(freed.stdout)")
    }

    /// With no relay: every process of this machine emitting to LTTng, told apart by process; rlctl's own relay
    /// daemon and session are gone afterwards.
    @Test func withNoRelayItShowsThisMachinesProcesses() throws {
        guard LTTngCLIEnvironment.requirement.requireMet() else { return }
        let demo = CLI.sibling("runloop-demo")
        let programs = try (0..<2).map { _ in
            // Until the view is done (SIGTERM below): a fixed duration ran out on a loaded CI machine.
            try RunningProcess(demo, ["120"], ProcessOptions(environment: ["RLCTL_TRACER": "lttng"], timeout: .seconds(180)))
        }
        usleep(300_000)
        let shown = try CLI.run(["top", "--once", "--format", "json"])
        #expect(shown.status == 0, "\(shown.stderr)")
        let loops = try Self.rows(shown).loops
        let processes = Set(loops.compactMap { $0["processID"] as? Int })
        for program in programs { #expect(processes.contains(Int(program.pid)), "\(program.pid) in \(shown.stdout)") }
        for loop in loops where programs.contains(where: { Int($0.pid) == loop["processID"] as? Int }) {
            #expect((loop["iterationsPerSecond"] as? Double ?? 0) > 200, "\(loop)")
        }
        for program in programs {
            program.send(SIGTERM)
            _ = program.wait()
        }
        let sessions = try runProcess("/usr/bin/env", ["lttng", "list"]).stdout
        #expect(!sessions.contains("rlctl-top-"), "\(sessions)")
        let relays = try runProcess("/usr/bin/pgrep", ["-af", "lttng-relayd.*rlctl-top-"]).stdout
        #expect(relays.isEmpty, "\(relays)")
    }

    /// Any program's loop, recorded through the wait interposer with LTTng, shows as a `wait` row: Python's asyncio
    /// waking every 10 ms, about 100 iterations a second or more (each sleep is a wait; callbacks add some).
    @Test func anyProgramsWaitLoopShows() throws {
        guard LTTngCLIEnvironment.requirement.requireMet() else { return }
        let python = try #require(TestEnvironment.executable("python3"), "python3 (scripts/install-deps.sh)")
        // The program says its pid: other tests record other programs' wait loops meanwhile, and top shows them all.
        let pidFile = temporaryPath("top-asyncio.pid")
        let script = "import asyncio, os\nopen('\(pidFile)', 'w').write(str(os.getpid()))\n"
            + "async def main():\n    for _ in range(600): await asyncio.sleep(0.01)\nasyncio.run(main())\n"
        let recording = try CLI.start(["record", "--any", "--tracer", "lttng", "--", python, "-c", script])
        usleep(1_000_000)
        let shown = try CLI.run(["top", "--once", "--format", "json"])
        _ = recording.wait()
        #expect(shown.status == 0, "\(shown.stderr)")
        let pid = try #require(Int(try String(contentsOfFile: pidFile, encoding: .utf8)), "the program did not start")
        let waits = try Self.rows(shown).loops.filter { $0["kind"] as? String == "wait" && $0["processID"] as? Int == pid }
        let loop = try #require(waits.first { ($0["iterationsPerSecond"] as? Double ?? 0) > 50 }, "\(shown.stdout)")
        #expect((loop["utilization"] as? Double ?? 1) < 0.5, "\(loop)")
    }

    /// A static program's loop, recorded by the kernel (`record --any` where LD_PRELOAD cannot reach), shows as a
    /// `wait` row too: 2 ms waits, about 500 iterations a second.
    @Test(.enabled(if: kernelViewRequirement.shouldRun, kernelViewRequirement.skipComment))
    func aLoopTheKernelRecordsShows() throws {
        guard kernelViewRequirement.requireMet(), AnyProgramTests.compiler.requireMet() else { return }
        let program = try AnyProgramTests.compile("counted-waits.c", flags: ["-static"])
        let recording = try CLI.start(["record", "--any", "--", program, "1500"])
        defer { recording.send(SIGKILL, toGroup: true); _ = recording.wait() }
        let pid = try #require(PrometheusExportTests.nodePID(parent: recording.pid), "the program did not start")
        usleep(1_200_000)
        let shown = try CLI.run(["top", "--once", "--format", "json"])
        #expect(shown.status == 0, "\(shown.stderr)")
        let waits = try Self.rows(shown).loops.filter { $0["kind"] as? String == "wait" && $0["processID"] as? Int == pid }
        #expect(waits.contains { ($0["iterationsPerSecond"] as? Double ?? 0) > 100 }, "\(shown.stdout.prefix(1500))")
        let recorded = recording.wait()
        #expect(recorded.status == 0, "\(recorded.termination): \(recorded.stderr)")
    }

    /// A relay daemon that goes away is said on the status line, and its sessions are followed again once it is
    /// back: a program recorded to the restarted relay shows.
    @Test func itSurvivesARelayDaemonRestarting() throws {
        guard LTTngCLIEnvironment.requirement.requireMet() else { return }
        let relay = try LocalRelayDaemon()
        defer { relay.stop(); relay.removeOutput() }
        let top = try CLI.start(["top", "--relayd", relay.liveURL, "--interval", "300ms"], timeout: .seconds(120))
        usleep(1_000_000)
        relay.stop()
        usleep(3_000_000)
        try relay.restart()
        let recording = try CLI.start(["record", "--relayd", relay.recordURL, "--", CLI.sibling("runloop-demo"), "120"])
        // Until top has drawn the program's loop after the relay was down (bounded; the expectations say if not).
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline && top.isRunning {
            let tables = top.outputSoFar.stdout.components(separatedBy: "rlctl top — ")
            if let down = tables.firstIndex(where: { $0.contains("RELAY NOT ANSWERING") }),
               tables[down...].contains(where: { $0.contains("RunLoopCore") }) { break }
            usleep(200_000)
        }
        kill(top.pid, SIGINT)
        let viewed = top.wait()
        recording.send(SIGTERM)
        _ = recording.wait()
        #expect(viewed.status == 0, "\(viewed.stderr)")
        let tables = viewed.stdout.components(separatedBy: "rlctl top — ").dropFirst()
        let down = tables.firstIndex { $0.contains("RELAY NOT ANSWERING: cannot connect to the relay daemon's live port") }
        let back = tables.lastIndex { $0.contains("RunLoopCore") }
        #expect(down != nil, "\(viewed.stdout.suffix(1500))")
        #expect(back != nil && down.map { back! > $0 } == true, "\(viewed.stdout.suffix(1500))")
    }

    /// On a terminal (a pseudo-terminal from `script`): the table is redrawn in place, `s` sorts by stall at once,
    /// `q` quits, and the cursor is given back.
    @Test func onATerminalKeysSortAndQuit() throws {
        guard LTTngCLIEnvironment.requirement.requireMet() else { return }
        let relay = try LocalRelayDaemon()
        defer { relay.stop(); relay.removeOutput() }
        let command = "'\(CLI.binary)' top --relayd \(relay.liveURL) --interval 300ms"
        // Each key once the screen shows the state before it (the typescript, flushed as it comes, tells).
        let typescript = temporaryPath("top-terminal.typescript")
        defer { try? FileManager.default.removeItem(atPath: typescript) }
        let keys = """
            until_shown() { for _ in $(seq 300); do grep -q "$1" '\(typescript)' 2>/dev/null && return; sleep 0.1; done; }
            until_shown 'sorted by utilization'; printf s; until_shown 'sorted by stall'; printf q
            """
        let session = try runProcess("/bin/bash", ["-c", "(\(keys)) | script -qefc \"\(command)\" '\(typescript)'"],
                                     ProcessOptions(timeout: .seconds(90)))
        #expect(session.status == 0, "\(session.stdout)\(session.stderr)")
        let screen = session.stdout
        let byUtilization = try #require(screen.range(of: "sorted by utilization"), "\(screen.prefix(400))")
        let byStall = try #require(screen.range(of: "sorted by stall"), "\(screen.suffix(400))")
        #expect(byUtilization.lowerBound < byStall.lowerBound)
        #expect(screen.contains("\u{1B}[H\u{1B}[2Jrlctl top — \(relay.liveURL)"), "redrawn in place")
        // The screen says what its columns mean (printed tables do not repeat it every interval).
        #expect(screen.contains("util: busy share of the interval") && screen.contains("sessions: the recordings followed"), "\(screen.suffix(600))")
        #expect(screen.hasSuffix("\u{1B}[?25h\r\n") || screen.hasSuffix("\u{1B}[?25h\n"), "the cursor is shown again: \(screen.suffix(40).debugDescription)")
    }

    @Test func badRelaysAndFlagsAreOneLineErrors() throws {
        guard LTTngCLIEnvironment.requirement.requireMet() else { return }
        let cases: [([String], String)] = [
            (["--relayd", "localhost"], "--relayd takes a relay daemon's live URL, net://HOST[:LIVE_PORT]"),
            (["--relayd", "net://127.0.0.1/host/x/y"], "--relayd takes a relay daemon's live URL"),
            (["--interval", "0"], "--interval must be between 100ms and 60s"),
            (["--format", "json"], "--format json prints one interval: give --once"),
            (["--relayd", "net://127.0.0.1:1", "--once"], "cannot read the relay daemon at net://127.0.0.1:1: cannot connect to the relay daemon's live port"),
        ]
        for (flags, message) in cases {
            let result = try CLI.run(["top"] + flags, timeout: .seconds(30))
            #expect(result.status == 2, "\(flags): \(result.stdout)\(result.stderr)")
            #expect(result.stderr.contains(message), "\(flags): \(result.stderr)")
            #expect(result.stderr.split(separator: "\n").count == 1, "\(flags): \(result.stderr)")
        }
    }
}
