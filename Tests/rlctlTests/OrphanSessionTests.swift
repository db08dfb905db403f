import Foundation
import Glibc
import Testing
import TestSupport
import Tracing

/// After a SIGKILL of rlctl, the next one removes what it left; a session daemon rlctl started goes with it; a
/// session daemon that went away still leaves a summary.
@Suite(.serialized, .enabled(if: LTTngCLIEnvironment.shouldRun, LTTngCLIEnvironment.skipComment))
struct OrphanSessionTests {
    /// A SIGKILL runs nothing in rlctl: the program dies with it (its parent-death signal), and the session it
    /// left active, with its temporary folder, goes with the next LTTng-using rlctl, which says so. Used to stay
    /// for good, recording for nobody.
    @Test(arguments: ["doctor", "record"])
    func theNextRlctlRemovesTheSessionOfAKilledOne(next: String) throws {
        lttngSessionLock.lock()
        defer { lttngSessionLock.unlock() }
        let rlctl = try CLI.start(["record", "--tracer", "lttng", "--", CLI.sibling("runloop-demo"), "60"])
        let program = rlctl.child(running: "runloop-demo")
        defer { if let program, LeftBehind.isRunning(program) { kill(program, SIGKILL) } }
        var session: String?
        _ = eventually(timeout: .seconds(60)) {
            session = LeftBehind.sessions(of: rlctl.pid).first
            return session != nil || !rlctl.isRunning
        }
        try #require(program != nil && session != nil && rlctl.isRunning, "the recording did not start")
        let folders = LeftBehind.temporaryFolders(of: rlctl.pid)
        rlctl.send(SIGKILL)
        // Before waiting for rlctl: the wait also waits for its output, which a program that outlived it holds.
        #expect(eventually(timeout: .seconds(10)) { !LeftBehind.isRunning(program!) }, "the program outlived rlctl")
        if LeftBehind.isRunning(program!) { kill(program!, SIGKILL) }
        _ = rlctl.wait()
        #expect(LeftBehind.sessions(of: rlctl.pid) == [session!], "the killed rlctl's session is listed until the next rlctl")

        let later = next == "doctor" ? try CLI.run(["doctor"])
                                     : try CLI.run(["record", "--tracer", "lttng", "--", CLI.sibling("runloop-demo"), "1"])
        let said = later.stdout + later.stderr
        #expect(LeftBehind.sessions(of: rlctl.pid).isEmpty)
        // Every LTTng-using rlctl removes orphans: in the parallel suite another test's rlctl can come first, and
        // says so on its own output (seen in CI). The end state above is what must hold; the message, when ours.
        withKnownIssue("another test's rlctl removed the orphan session first", isIntermittent: true) {
            #expect(said.contains("removed the LTTng session \(session!), left by rlctl process \(rlctl.pid), which is gone, and its temporary folder"),
                    "\(said)")
        }
        #expect(folders.allSatisfy { !FileManager.default.fileExists(atPath: NSTemporaryDirectory() + $0) }, "left: \(folders)")
    }

    /// A SIGKILLed top leaves its relay daemon (a daemon, not killed with it), its session and its folder: the
    /// next LTTng-using rlctl stops and removes them all, and says so.
    @Test func theNextRlctlRemovesWhatAKilledTopLeft() throws {
        lttngSessionLock.lock()
        defer { lttngSessionLock.unlock() }
        let (top, relay) = try LeftBehind.startWatchingTop()
        defer { if let relay, LeftBehind.isRunning(relay) { kill(relay, SIGKILL) } }
        try #require(relay != nil, "top did not start watching")
        let folders = LeftBehind.temporaryFolders(of: top.pid)
        top.send(SIGKILL)
        _ = top.wait()
        #expect(LeftBehind.isRunning(relay!), "the relay daemon is expected to outlive a SIGKILLed top")

        let doctor = try CLI.run(["doctor"])
        // As above: in the parallel suite another test's rlctl may stop the daemon first (seen in CI: this doctor
        // removed top's sessions, the daemon was already gone). The end state must hold; the message, when ours.
        withKnownIssue("another test's rlctl stopped the relay daemon first", isIntermittent: true) {
            #expect(doctor.stdout.contains("stopped the relay daemon \(relay!) of rlctl top process \(top.pid), which is gone"), "\(doctor.stdout)")
        }
        #expect(eventually(timeout: .seconds(10)) { !LeftBehind.isRunning(relay!) }, "the relay daemon still runs")
        #expect(LeftBehind.sessions(of: top.pid).isEmpty, "left: \(LeftBehind.sessions(of: top.pid))")
        #expect(folders.allSatisfy { !FileManager.default.fileExists(atPath: NSTemporaryDirectory() + $0) }, "left: \(folders)")
    }
}

/// A session daemon of the test's own: rlctl run in a mount namespace whose /run/lttng and /dev/shm are new
/// (LTTng's sockets, pid file and shared memory), so it finds no daemon, starts one, and the test may kill it
/// without touching the machine's daemon, which other tests use.
enum PrivateSessionDaemon {
    static let requirement: TestRequirement = {
        let problem = "the own-session-daemon tests cannot give rlctl a daemon of its own here"
        guard LTTngCLIEnvironment.usable else { return TestRequirement(missing: LTTngCLIEnvironment.requirement.missing, problem: problem) }
        guard geteuid() == 0 else { return TestRequirement(missing: "root (mount namespaces)", problem: problem) }
        return TestRequirement(missing: LTTngTools.path(of: "unshare") == nil ? "unshare" : nil, problem: problem)
    }()

    /// Runs `script` (sh, with "$@" the arguments) in the namespace once its LTTng folders are new.
    static func run(_ script: String, _ arguments: [String]) throws -> ProcessOutput {
        let prologue = """
            mkdir -p /run/lttng && mount -t tmpfs rlctl-own-daemon /run/lttng && mount -t tmpfs rlctl-own-daemon /dev/shm || exit 99
            """
        return try runProcess("/usr/bin/env", ["unshare", "--mount", "--propagation", "private", "sh", "-c", prologue + "\n" + script, "sh"] + arguments,
                              ProcessOptions(timeout: .seconds(180)))
    }

    /// The daemon's pid the script printed as `daemon PID`; the test ends it if rlctl left it running.
    static func daemon(in output: ProcessOutput) -> pid_t? {
        output.stdout.split(separator: "\n").first { $0.hasPrefix("daemon ") }.flatMap { pid_t($0.dropFirst(7)) }
    }
}

@Suite(.serialized, .enabled(if: PrivateSessionDaemon.requirement.shouldRun, PrivateSessionDaemon.requirement.skipComment))
struct OwnSessionDaemonTests {
    /// record and top used to start a session daemon and leave it running.
    @Test(arguments: [["record", "--tracer", "lttng", "--", CLI.sibling("runloop-demo"), "1"], ["top", "--once", "--interval", "200ms"]])
    func aSessionDaemonRlctlStartedStopsWithIt(command: [String]) throws {
        lttngSessionLock.lock()
        defer { lttngSessionLock.unlock() }
        // The daemon's pid: from its pid file when it still runs, else from rlctl's word that it started it.
        let ended = try PrivateSessionDaemon.run("""
            "$@" >/dev/null; echo "status $?"
            [ -f /run/lttng/lttng-sessiond.pid ] && echo "daemon $(cat /run/lttng/lttng-sessiond.pid)"
            """, [CLI.binary] + command)
        let said = ended.stderr.range(of: "(lttng-sessiond --daemonize, pid ").flatMap { pid_t(ended.stderr[$0.upperBound...].prefix { $0.isNumber }) }
        let daemon = try #require(PrivateSessionDaemon.daemon(in: ended) ?? said, "\(ended.stdout) \(ended.stderr)")
        defer { if LeftBehind.isRunning(daemon) { kill(daemon, SIGKILL) } }
        #expect(ended.stdout.contains("status 0"), "\(ended.stdout) \(ended.stderr)")
        #expect(eventually(timeout: .seconds(15)) { !LeftBehind.isRunning(daemon) }, "the session daemon rlctl started outlived it")
    }

    /// A session daemon that goes away mid-recording (here SIGTERM, as a service manager stops it) leaves a
    /// readable trace: summarized, the cause named, status 3. It used to be "cannot stop the LTTng session", no
    /// summary, status 2.
    @Test func aSessionDaemonThatWentAwayStillGetsItsTraceSummarized() throws {
        lttngSessionLock.lock()
        defer { lttngSessionLock.unlock() }
        let output = temporaryPath("daemon-gone")
        defer { try? FileManager.default.removeItem(atPath: output) }
        let ended = try PrivateSessionDaemon.run("""
            "$1" record --tracer lttng --output "$3" -- "$2" 8 >"$3.out" 2>"$3.err" & recording=$!
            tries=0
            until lttng --no-sessiond list 2>/dev/null | grep -q rlctl-record-; do
                tries=$((tries + 1)); [ $tries -gt 600 ] && break; sleep 0.1
            done
            daemon=$(cat /run/lttng/lttng-sessiond.pid); echo "daemon $daemon"
            until pgrep -f "^$2 8" >/dev/null || [ $tries -gt 600 ]; do tries=$((tries + 1)); sleep 0.1; done
            # The program runs 8 s: 1.5 s of its events (flushed only when the daemon stops), then the daemon goes.
            sleep 1.5
            kill -TERM "$daemon"
            wait $recording; echo "status $?"
            """, [CLI.binary, CLI.sibling("runloop-demo"), output])
        defer { try? FileManager.default.removeItem(atPath: output + ".out"); try? FileManager.default.removeItem(atPath: output + ".err") }
        if let daemon = PrivateSessionDaemon.daemon(in: ended), LeftBehind.isRunning(daemon) { kill(daemon, SIGKILL) }
        let stdout = (try? String(contentsOfFile: output + ".out", encoding: .utf8)) ?? ""
        let stderr = (try? String(contentsOfFile: output + ".err", encoding: .utf8)) ?? ""
        #expect(ended.stdout.contains("status 3"), "\(ended.stdout) \(ended.stderr) \(stderr)")
        #expect(stdout.contains("trace: ") && stdout.contains("loop 1"), "no summary: \(stdout.prefix(400)) \(stderr)")
        #expect(stderr.contains("the LTTng session daemon went away during the recording, so the trace ends where it stopped writing; the summary covers what it wrote"),
                "\(stderr)")
    }
}
