import Foundation
import Glibc
import Testing
import TestSupport
import Tracing

/// Issue 27, item 6, "nothing left behind": however rlctl ends, what it started and made goes with it (the
/// recorded program, LTTng sessions, the relay daemon, temporary folders), or, after a SIGKILL, goes with the
/// next rlctl.
enum LeftBehind {
    /// Whether a process still runs: a zombie (killed, not yet reaped by its new parent) does not.
    static func isRunning(_ pid: pid_t) -> Bool {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return false }
        return !status.split(separator: "\n").contains { $0.hasPrefix("State:") && $0.contains("Z") }
    }

    /// The children of every thread of `pid` (`RunningProcess.children` lists the main thread's only).
    static func childrenOfEveryThread(of pid: pid_t) -> [pid_t] {
        let threads = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return threads.flatMap { thread in
            ((try? String(contentsOfFile: "/proc/\(pid)/task/\(thread)/children", encoding: .utf8)) ?? "").split(separator: " ").compactMap { pid_t($0) }
        }
    }

    /// Starts `rlctl top` and waits until it watches through its relay daemon (a child of its main thread until
    /// one is started again) and its started session; the relay daemon is nil when that did not happen in time.
    static func startWatchingTop() throws -> (top: RunningProcess, relay: pid_t?) {
        let top = try CLI.start(["top", "--interval", "500ms"], timeout: .seconds(120))
        var relay: pid_t?
        let watching = eventually(timeout: .seconds(60)) {
            relay = top.children.first { URL(fileURLWithPath: executablePath(of: $0)).lastPathComponent == "lttng-relayd" }
            return (relay != nil && !sessions(of: top.pid, active: true).isEmpty) || !top.isRunning
        }
        return (top, watching && top.isRunning ? relay : nil)
    }

    /// The temporary folders rlctl process `pid` made (`rlctl-LABEL-PID.START-…` or `rlctl-LABEL-PID-…` in the
    /// temporary folder).
    static func temporaryFolders(of pid: pid_t) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: NSTemporaryDirectory())) ?? []
        return names.filter { $0.hasPrefix("rlctl-") && ($0.contains("-\(pid)-") || $0.contains("-\(pid).")) }
    }

    /// Whether an embedded recorder in one of rlctl process `pid`'s temporary folders has written a packet.
    static func hasWrittenEvents(of pid: pid_t) -> Bool {
        temporaryFolders(of: pid).contains { name in
            let folder = NSTemporaryDirectory() + name
            let streams = ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).filter { $0.hasPrefix("stream") }
            return streams.contains { ((try? FileManager.default.attributesOfItem(atPath: folder + "/" + $0))?[.size] as? Int ?? 0) > 0 }
        }
    }

    /// The LTTng sessions rlctl process `pid` made that the session daemon still lists (`active`: started only).
    static func sessions(of pid: pid_t, active: Bool = false) -> [String] {
        let listing = (try? LTTngTools.lttng(["list"])) ?? ""
        return listing.split(separator: "\n").compactMap { line in
            let words = line.split(separator: " ")
            guard words.count >= 2, words[0].hasSuffix(")"), words[1].hasPrefix("rlctl-"), words[1].contains("-\(pid)."),
                  !active || line.contains("[active]") else { return nil }
            return String(words[1])
        }
    }

    /// Records runloop-demo (asked to run 60 s) with `tracer`, into a temporary folder, and sends rlctl SIGHUP
    /// once the program runs and its recording has started; then rlctl has passed SIGHUP on, waited for the
    /// program, summarized what it recorded and left nothing behind.
    static func hangUpDuringRecord(tracer: String) throws {
        let rlctl = try CLI.start(["record", "--tracer", tracer, "--", CLI.sibling("runloop-demo"), "60"])
        let program = rlctl.child(running: "runloop-demo")
        defer { if let program, isRunning(program) { kill(program, SIGKILL) } }
        // Recording: the embedded recorder's first packet written; LTTng's session started, whose events show
        // only once it stops, so the program is given time to emit some, as in CutOffRecordTests.
        let recording = eventually(timeout: .seconds(60)) {
            if tracer == "lttng" { return !sessions(of: rlctl.pid, active: true).isEmpty || !rlctl.isRunning }
            return hasWrittenEvents(of: rlctl.pid) || !rlctl.isRunning
        }
        try #require(program != nil && recording && rlctl.isRunning, "the recording did not start")
        if tracer == "lttng" { usleep(1_500_000) }
        rlctl.send(SIGHUP)
        let end = rlctl.wait()
        // Documented: SIGHUP is passed on to the program, which ends by it; rlctl summarizes, status 1.
        #expect(end.termination == .exited(1), "\(end.termination), stderr: \(end.stderr)")
        #expect(end.stdout.contains("trace: "), "no summary: \(end.stdout.prefix(300)) \(end.stderr)")
        #expect(end.stderr.contains("runloop-demo was killed by signal 1 (Hangup)"), "\(end.stderr)")
        #expect(!(program.map(isRunning) ?? true), "the program outlived rlctl")
        #expect(temporaryFolders(of: rlctl.pid).isEmpty, "left: \(temporaryFolders(of: rlctl.pid))")
        if tracer == "lttng" { #expect(sessions(of: rlctl.pid).isEmpty, "left: \(sessions(of: rlctl.pid))") }
    }
}

/// The parts that need no LTTng.
struct LeftBehindEmbeddedTests {
    /// Used to end rlctl with status 129 and nothing printed, the program orphaned and the trace folder left.
    @Test func sighupDuringAnEmbeddedRecordPassesItOnAndSummarizes() throws {
        try LeftBehind.hangUpDuringRecord(tracer: "embedded")
    }

    /// SIGHUP ends `run` as SIGTERM does: the run ends early, the summary covers what ran, status 0.
    @Test func sighupDuringARunEndsItWithASummary() throws {
        let rlctl = try CLI.start(["run", "timers", "--duration", "60s"])
        let recording = eventually(timeout: .seconds(60)) { LeftBehind.hasWrittenEvents(of: rlctl.pid) || !rlctl.isRunning }
        try #require(recording && rlctl.isRunning, "the recording did not start")
        rlctl.send(SIGHUP)
        let end = rlctl.wait()
        #expect(end.termination == .exited(0), "\(end.termination), stderr: \(end.stderr)")
        #expect(end.stdout.contains("trace: ") && end.stdout.contains("loop 1"), "no summary: \(end.stdout.prefix(300))")
        #expect(end.stderr.contains("SIGHUP ended the run after"), "\(end.stderr)")
        #expect(LeftBehind.temporaryFolders(of: rlctl.pid).isEmpty)
    }
}

@Suite(.serialized, .enabled(if: LTTngCLIEnvironment.shouldRun, LTTngCLIEnvironment.skipComment))
struct LeftBehindLTTngTests {
    /// Used to end rlctl with status 129 and nothing printed, the session active and the program orphaned.
    @Test func sighupDuringAnLTTngRecordEndsTheSessionAndSummarizes() throws {
        lttngSessionLock.lock()
        defer { lttngSessionLock.unlock() }
        try LeftBehind.hangUpDuringRecord(tracer: "lttng")
    }
}

/// In TopTests' suite, which runs one test at a time: its tests look for any top's relay daemon once theirs ended.
extension TopTests {
    /// top's relay daemon, its session and its temporary folder go on SIGHUP as on `q`: they used to stay.
    @Test func sighupToTopRemovesItsRelayDaemonSessionAndFolder() throws {
        lttngSessionLock.lock()
        defer { lttngSessionLock.unlock() }
        let (top, relay) = try LeftBehind.startWatchingTop()
        defer { if let relay, LeftBehind.isRunning(relay) { kill(relay, SIGKILL) } }
        try #require(relay != nil, "top did not start watching")
        #expect(!LeftBehind.temporaryFolders(of: top.pid).isEmpty)
        top.send(SIGHUP)
        let end = top.wait()
        // Documented: SIGHUP, SIGINT and SIGTERM end top as `q` does.
        #expect(end.termination == .exited(0), "\(end.termination), stderr: \(end.stderr)")
        #expect(!LeftBehind.isRunning(relay!), "top's relay daemon outlived it")
        #expect(LeftBehind.sessions(of: top.pid).isEmpty, "left: \(LeftBehind.sessions(of: top.pid))")
        #expect(LeftBehind.temporaryFolders(of: top.pid).isEmpty, "left: \(LeftBehind.temporaryFolders(of: top.pid))")
    }

    /// A relay daemon of top's own that died used to leave top showing nothing for good.
    @Test func topStartsItsRelayDaemonAgainWhenItDies() throws {
        lttngSessionLock.lock()
        defer { lttngSessionLock.unlock() }
        // Watching: its set-up is over, and killing the relay now is killing a relay top watches through.
        let (top, first) = try LeftBehind.startWatchingTop()
        try #require(first != nil, "top did not start watching")
        let firstSession = LeftBehind.sessions(of: top.pid, active: true).first
        // Of any of top's threads: the relay daemon is started again from a thread of its own.
        func relay() -> pid_t? {
            LeftBehind.childrenOfEveryThread(of: top.pid).first { LeftBehind.isRunning($0) && URL(fileURLWithPath: executablePath(of: $0)).lastPathComponent == "lttng-relayd" }
        }
        kill(first!, SIGKILL)
        var second: pid_t?
        let restarted = eventually(timeout: .seconds(30)) {
            second = relay()
            // The note comes after the new session is listed: waited for too, so that SIGTERM does not overtake it.
            return (second != nil && second != first && LeftBehind.sessions(of: top.pid, active: true).contains { $0 != firstSession }
                    && top.outputSoFar.stderr.contains("died: started it again"))
                || !top.isRunning
        }
        defer { if let second, LeftBehind.isRunning(second) { kill(second, SIGKILL) } }
        #expect(restarted && top.isRunning, "no new relay daemon: \(String(describing: second))")
        top.send(SIGTERM)
        let end = top.wait()
        #expect(end.termination == .exited(0), "\(end.termination), stderr: \(end.stderr)")
        #expect(end.stderr.contains("the relay daemon rlctl started (pid \(first!)) died: started it again (pid "), "\(end.stderr)")
        #expect(LeftBehind.sessions(of: top.pid).isEmpty, "left: \(LeftBehind.sessions(of: top.pid))")
    }
}

extension LeftBehindEmbeddedTests {
    /// Under nohup(1) a hangup is to be outlived: rlctl and its program keep running through SIGHUP; SIGTERM
    /// still ends them with a summary. The program used to start with SIGHUP's default action, and die by it.
    @Test func underNohupSighupEndsNeitherRlctlNorItsProgram() throws {
        let nohup = try #require(["/usr/bin/nohup", "/bin/nohup"].first { FileManager.default.isExecutableFile(atPath: $0) })
        let rlctl = try RunningProcess(nohup, [CLI.binary, "record", "--tracer", "embedded", "--", CLI.sibling("runloop-demo"), "60"],
                                       ProcessOptions(timeout: .seconds(120)))
        // nohup executes rlctl in its own process.
        let program = rlctl.child(running: "runloop-demo")
        defer { if let program, LeftBehind.isRunning(program) { kill(program, SIGKILL) } }
        let demo = try #require(program, "the program did not start")
        let rlctlPID = rlctl.pid
        kill(rlctlPID, SIGHUP)
        kill(demo, SIGHUP)
        usleep(500_000)
        #expect(LeftBehind.isRunning(rlctlPID) && LeftBehind.isRunning(demo), "a hangup ended them under nohup")
        kill(rlctlPID, SIGTERM)
        let end = rlctl.wait()
        #expect(end.termination == .exited(1), "\(end.termination), stderr: \(end.stderr)")
        #expect(end.stderr.contains("runloop-demo was killed by signal 15 (Terminated)"), "\(end.stderr)")
    }
}

extension LeftBehindEmbeddedTests {
    /// The temporary trace folder of an rlctl killed by SIGKILL (a gone pid, named as rlctl names it) goes with
    /// the next rlctl that makes one; a folder of a running rlctl stays.
    @Test func theNextRlctlRemovesTheTemporaryFolderOfAKilledOne() throws {
        let gone = try RunningProcess("/bin/true", [])
        _ = gone.wait()
        let temporary = NSTemporaryDirectory()
        let orphan = temporary + "rlctl-trace-record-\(gone.pid).12345-42"
        let alive = temporary + "rlctl-trace-record-\(getpid()).\(ProcessStart.time(of: getpid()) ?? 0)-43"
        for folder in [orphan, alive] { try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true) }
        defer { try? FileManager.default.removeItem(atPath: alive) }
        _ = try CLI.run(["record", "--tracer", "embedded", "--", "/bin/true"])
        #expect(!FileManager.default.fileExists(atPath: orphan), "the killed rlctl's folder stays")
        #expect(FileManager.default.fileExists(atPath: alive), "a running rlctl's folder went")
    }
}
