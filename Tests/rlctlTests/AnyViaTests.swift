import Foundation
import Glibc
import Testing
import TestSupport

/// `rlctl record --any` where LD_PRELOAD cannot reach (`--any-via`): the kernel records the waits of a static
/// program, of one exec'd into such a program, and of threads that wait with raw system calls (Go), and the wait
/// interposer those of every thread it sees, each wait once. They need root and BPF; in CI (as root) a kernel view
/// that cannot be taken fails them.
@Suite(.enabled(if: kernelViewRequirement.shouldRun, kernelViewRequirement.skipComment))
struct AnyViaTests {
    static let compiler = AnyProgramTests.compiler
    static let go = AnyProgramTests.requirement(["go"])

    static func summary(_ result: ProcessOutput) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(result.stdout.prefix(300)) \(result.stderr)")
    }

    static func loops(_ summary: [String: Any]) -> [[String: Any]] {
        ((summary["waits"] as? [String: Any])?["loops"] as? [[String: Any]]) ?? []
    }

    /// Each recorded process's pid → the mechanisms that recorded it, with their reasons ("kernel: statically linked").
    static func recorders(_ summary: [String: Any]) -> [Int: [String]] {
        let listed = ((summary["waits"] as? [String: Any])?["recordedBy"] as? [[String: Any]]) ?? []
        var result: [Int: [String]] = [:]
        for recorder in listed {
            let by = (recorder["by"] as? String ?? "?") + ((recorder["why"] as? String).map { ": " + $0 } ?? "")
            result[recorder["pid"] as? Int ?? 0, default: []].append(by)
        }
        return result
    }

    /// pid → its loops' waits, by call family ("epoll", "poll/select"), for the processes this recording recorded
    /// ("recorded by"). (Two `--follow-children` recordings through LTTng at once, as these tests run, each get the
    /// other's interposed processes too: the session cannot know their pids in advance. docs/any-program.md.)
    static func waits(_ summary: [String: Any], of processes: Set<Int>? = nil) -> [Int: [String: Int]] {
        let ours = processes ?? Set(recorders(summary).keys)
        var result: [Int: [String: Int]] = [:]
        for loop in loops(summary) where ours.contains(loop["pid"] as? Int ?? 0) {
            result[loop["pid"] as? Int ?? 0, default: [:]][loop["family"] as? String ?? "?", default: 0] += loop["waits"] as? Int ?? 0
        }
        return result
    }

    @Test(.enabled(if: compiler.shouldRun, compiler.skipComment))
    func aStaticProgramIsRecordedByTheKernelEachWaitOnce() throws {
        guard Self.compiler.requireMet() else { return }
        let program = try AnyProgramTests.compile("counted-waits.c", flags: ["-static"])
        let trace = temporaryPath("static.rltrace")
        defer { try? FileManager.default.removeItem(atPath: trace) }
        let result = try CLI.run(["record", "--any", "--output", trace, "--format", "json", "--", program, "40"])
        #expect(result.status == 0, "\(result.termination): \(result.stderr)")
        #expect(result.stderr.contains("is statically linked, out of LD_PRELOAD's reach: the kernel records its waits"), "\(result.stderr)")
        let summary = try Self.summary(result)
        let pid = try #require(Self.waits(summary).keys.first, "no loop: \(summary)")
        #expect(Self.waits(summary) == [pid: ["epoll": 40]])
        #expect(Self.recorders(summary) == [pid: ["kernel: statically linked"]])
        // The kept trace reads the same.
        let again = try Self.summary(try CLI.run(["summarize", trace, "--format", "json"]))
        #expect(Self.waits(again, of: [pid]) == [pid: ["epoll": 40]])
    }

    /// Under a shell, with --follow-children: the static child by the kernel, the dynamic one by the interposer,
    /// each of their waits once (the interposer's claim keeps the kernel off the threads it records), with either
    /// tracer; and `rlctl summarize` reads the kernel's part of a kept trace with the rest.
    @Test(.enabled(if: compiler.shouldRun, compiler.skipComment), arguments: ["embedded", "lttng"])
    func eachProcessIsRecordedOnceByWhatReachesIt(tracer: String) throws {
        guard Self.compiler.requireMet() else { return }
        if tracer == "lttng" { guard LTTngCLIEnvironment.shouldRun, LTTngCLIEnvironment.requirement.requireMet() else { return } }
        let staticProgram = try AnyProgramTests.compile("counted-waits.c", flags: ["-static"])
        let dynamicProgram = try AnyProgramTests.compile("counted-waits.c")
        let trace = temporaryPath("mixed.rltrace")
        defer { try? FileManager.default.removeItem(atPath: trace) }
        let result = try CLI.run(["record", "--any", "--follow-children", "--tracer", tracer, "--output", trace, "--format", "json",
                                  "--", "/bin/sh", "-c", "\(staticProgram) 30; \(dynamicProgram) 20"])
        #expect(result.status == 0, "\(result.termination): \(result.stderr)")
        let summary = try Self.summary(result)
        let byPid = Self.waits(summary)
        let staticPid = byPid.first { $0.value == ["epoll": 30] }?.key
        let dynamicPid = byPid.first { $0.value == ["epoll": 20] }?.key
        #expect(byPid.count == 2 && staticPid != nil && dynamicPid != nil, "\(byPid)")
        let recorders = Self.recorders(summary)
        #expect(recorders[staticPid ?? -1] == ["kernel: statically linked"], "\(recorders)")
        #expect(recorders[dynamicPid ?? -1] == ["wait interposer"], "\(recorders)")
        #expect(((summary["health"] as? [String: Any])?["eventsLost"] as? Int) == 0, "\(summary["health"] ?? "")")
        // (A kept trace says nothing of which processes were this recording's: they are looked for by pid.)
        let again = try Self.summary(try CLI.run(["summarize", trace, "--format", "json"]))
        #expect(Self.waits(again, of: Set(byPid.keys)) == byPid)
    }

    /// A process the interposer recorded execs a static program: the same pid's new waits are the kernel's. (With
    /// --follow-children: auto loads the kernel's wait programs where the recorded programs may start or exec
    /// anything, a script or followed children; a lone dynamic program is the interposer's alone.)
    @Test(.enabled(if: compiler.shouldRun, compiler.skipComment))
    func anExecIntoAStaticProgramGivesItsWaitsBackToTheKernel() throws {
        guard Self.compiler.requireMet() else { return }
        let staticProgram = try AnyProgramTests.compile("counted-waits.c", flags: ["-static"])
        let first = try AnyProgramTests.compile("wait-then-exec.c")
        let result = try CLI.run(["record", "--any", "--follow-children", "--format", "json", "--", first, staticProgram, "25"])
        #expect(result.status == 0, "\(result.termination): \(result.stderr)")
        let summary = try Self.summary(result)
        let pid = try #require(Self.waits(summary).keys.first, "no loop: \(summary)")
        #expect(Self.waits(summary) == [pid: ["poll/select": 10, "epoll": 25]])
        #expect(Self.recorders(summary)[pid]?.sorted() == ["kernel: statically linked", "wait interposer"], "\(Self.recorders(summary))")
    }

    /// Go waits with raw system calls, so the interposer would see nothing even where it loads (Go links libc for its
    /// resolver): a Go program is the kernel's, and the summary says why.
    @Test(.enabled(if: go.shouldRun, go.skipComment))
    func aGoProgramIsRecordedThroughTheKernelBesideTheInterposer() throws {
        guard Self.go.requireMet() else { return }
        let program = try AnyProgramOutcomeTests.buildGo()
        defer { try? FileManager.default.removeItem(atPath: program) }
        let result = try CLI.run(["record", "--any", "--format", "json", "--", program, "500ms"])
        #expect(result.status == 0, "\(result.termination): \(result.stderr)")
        #expect(result.stderr.contains("is a Go program, whose runtime waits with raw system calls"), "\(result.stderr)")
        let summary = try Self.summary(result)
        let pid = try #require(Self.waits(summary).keys.first, "no loop: \(summary)")
        #expect(Self.recorders(summary)[pid] == ["kernel: a Go program: its runtime waits with raw system calls"], "\(Self.recorders(summary))")
        // A 5 ms ticker for 500 ms: its netpoller's waits, whichever threads took them.
        let waits = Self.waits(summary)[pid]?["epoll"] ?? 0
        #expect(waits >= 50, "\(waits) waits: \(Self.loops(summary))")
        // Go asks for whole milliseconds, rounding down: most ticks end with a 1 ms rest (about 80 of the 100 on an
        // idle machine), which the summary names on the netpoller's wait set; at most one per tick.
        let sets = ((summary["waits"] as? [String: Any])?["sets"] as? [[String: Any]]) ?? []
        let rests = sets.filter { $0["pid"] as? Int == pid }.compactMap { $0["millisecondRests"] as? Int }.reduce(0, +)
        #expect((10...101).contains(rests), "\(rests) millisecond rests: \(sets)")
    }

    /// A thread that waits with raw system calls in a process the interposer records (its threads that wait
    /// through libc are the interposer's): the kernel records its waits, and the summary says why.
    @Test(.enabled(if: compiler.shouldRun, compiler.skipComment))
    func rawSystemCallsBesideTheInterposerAreTheKernels() throws {
        guard Self.compiler.requireMet() else { return }
        let program = try AnyProgramTests.compile("raw-syscall-waits.c")
        let result = try CLI.run(["record", "--any", "--follow-children", "--format", "json", "--", program])
        #expect(result.status == 0, "\(result.termination): \(result.stderr)")
        let summary = try Self.summary(result)
        let pid = try #require(Self.waits(summary).keys.first, "no loop: \(summary)")
        #expect(Self.waits(summary) == [pid: ["epoll": 20]])
        #expect(Self.recorders(summary)[pid] == ["kernel: waits with raw system calls (Go's runtime does), which the interposer does not see"],
                "\(Self.recorders(summary))")
    }

    /// A poll stopped and continued (SIGSTOP, SIGCONT) goes on in the kernel through restart_syscall, unseen by the
    /// program: the kernel's record of it is two waits, the part before the stop (interrupted) and the rest (a
    /// poll timed out with the time that was left), so the 3 s are asleep, not busy.
    @Test(.enabled(if: compiler.shouldRun, compiler.skipComment))
    func aPollStoppedAndContinuedIsStillAsleepAfterwards() throws {
        guard Self.compiler.requireMet() else { return }
        let program = try AnyProgramTests.compile("stopped-poll.c")
        let pidFile = temporaryPath("stopped-poll.pid")
        defer { try? FileManager.default.removeItem(atPath: pidFile) }
        let recording = try CLI.start(["record", "--any", "--any-via", "kernel", "--format", "json", "--", program, pidFile])
        defer { recording.send(SIGKILL, toGroup: true); _ = recording.wait() }
        var pid: Int32 = 0
        #expect(eventually(timeout: .seconds(30)) {
            pid = Int32((try? String(contentsOfFile: pidFile, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "") ?? 0
            if pid == 0 { usleep(20_000) }
            return pid > 0
        }, "the program never wrote its pid")
        usleep(500_000)
        kill(pid, SIGSTOP)
        usleep(300_000)
        kill(pid, SIGCONT)
        let result = recording.wait()
        #expect(result.status == 0, "\(result.termination): \(result.stderr)")
        let summary = try Self.summary(result)
        let loop = try #require(Self.loops(summary).first { $0["pid"] as? Int == Int(pid) }, "no loop: \(summary)")
        let causes = loop["wakeCauses"] as? [String: Any] ?? [:]
        #expect(loop["waits"] as? Int == 22 && causes["interrupted"] as? Int == 1 && causes["timedOut"] as? Int == 21, "\(loop)")
        let sleep = try #require(loop["sleepNanoseconds"] as? Int)
        // 3 s of poll less the 0.3 s stopped (which is the iteration between the two parts), and the 1 ms polls.
        #expect(sleep >= 2_500_000_000, "asleep \(sleep) ns of a 3 s poll: \(loop)")
        #expect((loop["busyNanoseconds"] as? Int ?? .max) < 1_000_000_000, "\(loop)")
    }

    /// A thread the interposer claimed (it waited through libc) that then waits with raw system calls: the
    /// interposer's waits are its own, and the raw ones the kernel's, none lost and none twice.
    @Test(.enabled(if: compiler.shouldRun, compiler.skipComment))
    func aClaimedThreadsRawSystemCallsAreStillTheKernels() throws {
        guard Self.compiler.requireMet() else { return }
        let program = try AnyProgramTests.compile("libc-then-raw.c")
        let result = try CLI.run(["record", "--any", "--follow-children", "--format", "json", "--", program])
        #expect(result.status == 0, "\(result.termination): \(result.stderr)")
        let summary = try Self.summary(result)
        let pid = try #require(Self.waits(summary).keys.first, "no loop: \(summary)")
        #expect(Self.waits(summary) == [pid: ["poll/select": 10, "epoll": 20]], "\(Self.loops(summary))")
        #expect(Self.recorders(summary)[pid]?.count == 2, "\(Self.recorders(summary))")
    }

    /// `--any-via kernel`: nothing is loaded into the program (no interposer marker in the trace), and every wait is
    /// there.
    @Test(.enabled(if: compiler.shouldRun, compiler.skipComment))
    func theKernelAloneLoadsNothingIntoTheProgram() throws {
        guard Self.compiler.requireMet() else { return }
        let program = try AnyProgramTests.compile("counted-waits.c")
        let trace = temporaryPath("kernel-alone.rltrace")
        defer { try? FileManager.default.removeItem(atPath: trace) }
        let result = try CLI.run(["record", "--any", "--any-via", "kernel", "--output", trace, "--format", "json", "--", program, "30"])
        #expect(result.status == 0, "\(result.termination): \(result.stderr)")
        let summary = try Self.summary(result)
        let pid = try #require(Self.waits(summary).keys.first, "no loop: \(summary)")
        #expect(Self.waits(summary) == [pid: ["epoll": 30]])
        #expect(Self.recorders(summary) == [pid: ["kernel"]])
        let files = (try? FileManager.default.contentsOfDirectory(atPath: trace)) ?? []
        #expect(!files.contains { $0.hasPrefix(".proc-") }, "the interposer recorded: \(files)")
    }

    @Test(.enabled(if: compiler.shouldRun, compiler.skipComment))
    func whatCannotBeChosenIsOneLine() throws {
        guard Self.compiler.requireMet() else { return }
        let staticProgram = try AnyProgramTests.compile("counted-waits.c", flags: ["-static"])
        func expectError(_ arguments: [String], _ words: String, status: Int32 = 2, sourceLocation: SourceLocation = #_sourceLocation) throws {
            let result = try CLI.run(["record"] + arguments)
            #expect(result.status == status && result.stdout.isEmpty, "\(result.termination): \(result.stdout)", sourceLocation: sourceLocation)
            let lines = result.stderr.split(separator: "\n")
            #expect(lines.count == 1 && lines.first?.contains(words) == true, "\(result.stderr)", sourceLocation: sourceLocation)
        }
        try expectError(["--any-via", "kernel", "--", "true"], "--any-via goes with --any")
        try expectError(["--any", "--any-via", "kernel", "--kernel", "off", "--", "true"], "not with --kernel off")
        try expectError(["--any", "--any-via", "kernel", "--tracer", "lttng", "--", "true"], "not with --tracer")
        try expectError(["--any", "--any-via", "preload", "--", staticProgram], "is statically linked")
        try expectError(["--any", "--kernel", "off", "--", staticProgram],
                        "the kernel could record it instead without --kernel off")
        try expectError(["--any", "--any-via", "kernel", "--", "/nonexistent/program"], "no such program")
        try expectError(["--any", "--any-via", "kernel", "--", "/bin/true"], "without a wait call the kernel saw return", status: 3)
    }
}
