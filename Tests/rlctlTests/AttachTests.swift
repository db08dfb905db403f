import Foundation
import Glibc
import Testing
import TestSupport

/// `rlctl record --pid`: programs already running, attached from the kernel's side (syscall and scheduler
/// tracepoints), never stopped, ptraced or injected into. They need root and BPF; in CI (as root) a kernel view
/// that cannot be taken fails them.
@Suite(.serialized, .enabled(if: kernelViewRequirement.shouldRun, kernelViewRequirement.skipComment))
struct AttachTests {
    static let node = AnyProgramTests.node
    static let benchmarks = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Benchmarks/attach").path
    static let python = AnyProgramTests.python

    /// A started program, ended (SIGKILL) when the test ends however it ends.
    final class Program {
        let process: RunningProcess
        init(_ executable: String, _ arguments: [String]) throws {
            process = try RunningProcess(executable, arguments, ProcessOptions(timeout: .seconds(120)))
        }
        deinit { if process.isRunning { process.send(SIGKILL) } }
    }

    /// Waits until the attached rlctl said it is attached (or ended); its stderr so far.
    static func waitUntilAttached(_ rlctl: RunningProcess) throws {
        let attached = eventually(timeout: .seconds(60)) { rlctl.outputSoFar.stderr.contains("rlctl: attached to ") || !rlctl.isRunning }
        try #require(attached && rlctl.isRunning, "rlctl did not attach: \(rlctl.outputSoFar.stderr)")
    }

    /// The ids of the probe's wait-call programs (rlctl_kp_w_*) loaded now. `record --any` loads them too, so other
    /// tests running beside these have theirs: each test looks at the ones its own rlctl held.
    static func waitPrograms() -> Set<Int> {
        guard let bpftool = TestEnvironment.executable("bpftool"), let shown = try? runProcess(bpftool, ["-j", "prog", "show"]),
              let programs = try? JSONSerialization.jsonObject(with: Data(shown.stdout.utf8)) as? [[String: Any]] else { return [] }
        return Set(programs.compactMap { ($0["name"] as? String)?.hasPrefix("rlctl_kp_w_") == true ? $0["id"] as? Int : nil })
    }

    /// The wait-call programs process `pid` holds a descriptor of (a program's, or a link's to one), from its fdinfo.
    static func waitPrograms(heldBy pid: Int32) -> Set<Int> {
        let loaded = waitPrograms()
        var held: Set<Int> = []
        let folder = "/proc/\(pid)/fdinfo"
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] {
            guard let text = try? String(contentsOfFile: folder + "/" + entry, encoding: .utf8) else { continue }
            for line in text.split(separator: "\n") where line.hasPrefix("prog_id:") {
                if let id = Int(line.dropFirst(8).trimmingCharacters(in: .whitespaces)), loaded.contains(id) { held.insert(id) }
            }
        }
        return held
    }

    /// Which of `programs` are loaded still after up to 10 s (the kernel frees a program some time after its last
    /// descriptor closes).
    static func leftLoaded(_ programs: Set<Int>) -> Set<Int> {
        var left = programs
        _ = eventually(timeout: .seconds(10)) {
            left = waitPrograms().intersection(programs)
            return left.isEmpty
        }
        return left
    }

    /// A Node server under wrk, attached for a window: its loop's utilization agrees with Node's own
    /// performance.eventLoopUtilization() over the same window (marked by SIGUSR2 when rlctl said it attached and
    /// detached), and every burn in the window is a stall with the loop's thread. Nothing of the probe stays loaded.
    @Test(.enabled(if: node.shouldRun, node.skipComment))
    func anAttachedNodeServerAgreesWithItsOwnMeterOverTheWindow() throws {
        guard Self.node.requireMet() else { return }
        let report = temporaryPath("node-attach.json"), trace = temporaryPath("node-attach.rltrace")
        let port = AnyProgramTests.freePort()
        let node = try Program(TestEnvironment.executable("node")!,
                               ["\(AnyProgramTests.programs)/node-server.js", "\(port)", "9", "250", "60", report])
        try #require(AnyProgramTests.waitForPort(port), "node did not listen on \(port)")
        let wrk = try RunningProcess(TestEnvironment.executable("wrk")!, ["-t1", "-c8", "-d7s", "http://127.0.0.1:\(port)/"])
        usleep(300_000)
        let rlctl = try CLI.start(["record", "--pid", "\(node.process.pid)", "--duration", "4s", "--output", trace,
                                   "--format", "json", "--stall", "30ms"])
        try Self.waitUntilAttached(rlctl)
        let held = Self.waitPrograms(heldBy: rlctl.pid)
        node.process.send(SIGUSR2)
        let detached = eventually(timeout: .seconds(60)) { rlctl.outputSoFar.stderr.contains("rlctl: detached") || !rlctl.isRunning }
        node.process.send(SIGUSR2)
        #expect(detached)
        let recorded = rlctl.wait()
        try #require(recorded.status == 0, "\(recorded.termination): \(recorded.stderr)")
        #expect(!held.isEmpty, "rlctl held no wait-call program while attached")
        #expect(Self.leftLoaded(held).isEmpty, "rlctl's BPF programs still loaded: \(Self.leftLoaded(held))")
        _ = wrk.wait()
        let ended = node.process.wait()
        try #require(ended.status == 0, "node: \(ended.stderr)")

        let own = try AnyProgramTests.json(report)
        let pid = Int(node.process.pid)
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(recorded.stdout.utf8)) as? [String: Any])
        let waits = try #require(summary["waits"] as? [String: Any], "no waits: \(recorded.stdout.prefix(400))")
        let loop = try AnyProgramTests.waitLoop(in: waits, pid: pid, threadID: pid)
        let ours = try #require(loop["utilization"] as? Double), nodes = try #require(own["window_utilization"] as? Double)
        #expect(abs(ours - nodes) <= 0.02, "rlctl --pid: \(ours), Node's eventLoopUtilization over the window: \(nodes)")
        // 4 s of 60 ms burns every 250 ms: at least 14 whole ones, each a stall of its own.
        let stalls = try #require(loop["stalls"] as? Int)
        #expect(stalls >= 14, "\(stalls) stalls over 30 ms in 4 s of 60 ms burns every 250 ms")
        let worst = try #require((loop["worstStalls"] as? [[String: Any]])?.first?["busyNanoseconds"] as? Int)
        #expect(worst >= 60_000_000)
        #expect(loop["kernel"] != nil, "the kernel's side of the loop is missing")
    }

    /// The same Node server recorded both ways at once: started under `record --any` (the interposer) and attached
    /// to by `record --pid` (the kernel) for a window. Both see the same wait calls: over the attached window the
    /// main thread's waits are the same in number (within the two at its edges), and the utilization the interposer's
    /// waits give over that window agrees with the attach's within 2 points; so does Node's own meter.
    @Test(.enabled(if: node.shouldRun, node.skipComment))
    func anAttachedNodeServerAgreesWithItsAnyRecording() throws {
        guard Self.node.requireMet() else { return }
        let report = temporaryPath("node-both.json"), anyTrace = temporaryPath("node-any.rltrace"), pidTrace = temporaryPath("node-pid.rltrace")
        defer { for path in [anyTrace, pidTrace] { try? FileManager.default.removeItem(atPath: path) } }
        let port = AnyProgramTests.freePort()
        let recording = try CLI.start(["record", "--any", "--tracer", "embedded", "--output", anyTrace, "--format", "json", "--stall", "30ms",
                                       "--", TestEnvironment.executable("node")!, "\(AnyProgramTests.programs)/node-server.js", "\(port)", "8",
                                       "250", "60", report])
        defer { recording.send(SIGKILL, toGroup: true) }
        try #require(AnyProgramTests.waitForPort(port), "node did not listen on \(port): \(recording.outputSoFar.stderr)")
        // The interposer's start marker names the recorded process: node.
        let marker = try #require(((try? FileManager.default.contentsOfDirectory(atPath: anyTrace)) ?? [])
            .first { $0.hasPrefix(".proc-") && $0.hasSuffix(".start") }, "no start marker in \(anyTrace)")
        let nodePid = try #require(Int32(marker.dropFirst(6).dropLast(6)), "\(marker)")
        let wrk = try RunningProcess(TestEnvironment.executable("wrk")!, ["-t1", "-c8", "-d6s", "http://127.0.0.1:\(port)/"])
        usleep(300_000)
        let attached = try CLI.start(["record", "--pid", "\(nodePid)", "--duration", "4s", "--output", pidTrace, "--format", "json",
                                      "--stall", "30ms"])
        try Self.waitUntilAttached(attached)
        kill(nodePid, SIGUSR2)
        let detached = eventually(timeout: .seconds(60)) { attached.outputSoFar.stderr.contains("rlctl: detached") || !attached.isRunning }
        kill(nodePid, SIGUSR2)
        #expect(detached)
        let byKernel = attached.wait()
        try #require(byKernel.status == 0, "\(byKernel.termination): \(byKernel.stderr)")
        _ = wrk.wait()
        let byInterposer = recording.wait()
        try #require(byInterposer.status == 0, "\(byInterposer.termination): \(byInterposer.stderr)")

        let summary = try #require(try JSONSerialization.jsonObject(with: Data(byKernel.stdout.utf8)) as? [String: Any])
        let loop = try AnyProgramTests.waitLoop(in: try #require(summary["waits"] as? [String: Any]), pid: Int(nodePid), threadID: Int(nodePid))
        let ours = try #require(loop["utilization"] as? Double)
        let nodes = try #require(try AnyProgramTests.json(report)["window_utilization"] as? Double)
        #expect(abs(ours - nodes) <= 0.02, "rlctl --pid: \(ours), Node's eventLoopUtilization over the window: \(nodes)")

        // Each recording's main-thread waits, as (begin, end), from `rlctl export --format jsonl`.
        func waits(_ trace: String) throws -> [(begin: UInt64, end: UInt64)] {
            let file = temporaryPath("waits.jsonl")
            defer { try? FileManager.default.removeItem(atPath: file) }
            let exported = try CLI.run(["export", trace, "--format", "jsonl", "--output", file])
            try #require(exported.status == 0, "export \(trace): \(exported.stderr)")
            var result: [(begin: UInt64, end: UInt64)] = []
            var begin: UInt64?
            for line in try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n") {
                guard let row = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                      (row["thread_id"] as? NSNumber)?.int32Value == nodePid,
                      let time = (row["timestamp_ns"] as? NSNumber)?.uint64Value else { continue }
                switch row["event"] as? String {
                case "wait_begin": begin = time
                case "wait_end":
                    if let known = begin, known != .max { result.append((known, time)) }
                    begin = nil
                default: break
                }
            }
            return result
        }
        let kernelWaits = try waits(pidTrace), interposerWaits = try waits(anyTrace)
        let from = try #require(kernelWaits.first?.end), to = try #require(kernelWaits.last?.end)
        let inWindow = interposerWaits.filter { $0.end >= from && $0.end <= to }
        #expect(abs(inWindow.count - kernelWaits.count) <= 2, "the interposer saw \(inWindow.count) waits in the window, the kernel \(kernelWaits.count)")
        // Busy from one wait's end to the next one's begin, asleep in the wait: each side's waits alike.
        func utilization(_ waits: [(begin: UInt64, end: UInt64)]) -> Double {
            var busy: UInt64 = 0, asleep: UInt64 = 0
            for (previous, wait) in zip(waits, waits.dropFirst()) {
                busy += wait.begin > previous.end ? wait.begin - previous.end : 0
                asleep += wait.end > wait.begin ? wait.end - wait.begin : 0
            }
            return Double(busy) / Double(max(busy + asleep, 1))
        }
        let theirs = utilization(inWindow), kernelSide = utilization(kernelWaits)
        #expect(abs(ours - theirs) <= 0.02, "rlctl --pid: \(ours), rlctl --any over the same window: \(theirs)")
        // (The interposer times a wait around the system call, the attach's own cost per wait included.)
        #expect(abs(kernelSide - theirs) <= 0.015, "the same waits, timed by the kernel: \(kernelSide), by the interposer: \(theirs)")
    }

    static let go = AnyProgramTests.requirement(["go"])

    /// One HTTP/1.0 request to the loopback port, its answer read to the end; false when it failed.
    static func request(_ port: Int, path: String = "/") -> Bool {
        let fd = AnyProgramTests.connectLoopback(port)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        let asked = Array("GET \(path) HTTP/1.0\r\n\r\n".utf8)
        guard write(fd, asked, asked.count) == asked.count else { return false }
        var buffer = [UInt8](repeating: 0, count: 4096)
        var answered = 0
        while true {
            let count = read(fd, &buffer, buffer.count)
            if count <= 0 { return count == 0 && answered > 0 }
            answered += count
        }
    }

    /// Each thread's time on a CPU so far, from the scheduler's own count (/proc/PID/task/TID/schedstat, ns).
    static func cpuTimes(_ pid: pid_t) -> [Int32: UInt64] {
        var times: [Int32: UInt64] = [:]
        for task in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? [] {
            guard let tid = Int32(task), let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/schedstat", encoding: .utf8),
                  let first = text.split(separator: " ").first, let ns = UInt64(first) else { continue }
            times[tid] = ns
        }
        return times
    }

    /// A Go HTTP server (raw epoll_pwait system calls, a netpoller several runtime threads take turns at), asked for
    /// requests one at a time, every third a burn of 40 ms in its handler, then plain ones again (a runtime thread's
    /// iteration ends only at its next poll): one wait set with its threads; every burn is a stall of about 40 ms on
    /// the thread that ran it, and no other iteration is; each thread's busy time agrees with its time on a CPU over
    /// the same window (the scheduler's own count), the machine being otherwise idle.
    @Test(.enabled(if: go.shouldRun, go.skipComment))
    func anAttachedGoServerHasOneWaitSetAndEveryBurnIsAStall() throws {
        guard Self.go.requireMet() else { return }
        let binary = temporaryPath("go-server")
        let built = try runProcess(TestEnvironment.executable("go")!, ["build", "-o", binary, "go-server.go"],
                                   ProcessOptions(workingDirectory: Self.benchmarks, timeout: .seconds(300)))
        try #require(built.status == 0, "go build: \(built.stderr)")
        let port = AnyProgramTests.freePort()
        let server = try Program(binary, ["\(port)", "0"])
        try #require(AnyProgramTests.waitForPort(port), "the Go server did not listen on \(port)")
        #expect(Self.request(port))   // the runtime's threads are started before the attach
        let rlctl = try CLI.start(["record", "--pid", "\(server.process.pid)", "--format", "json", "--stall", "35ms"])
        try Self.waitUntilAttached(rlctl)
        let before = Self.cpuTimes(server.process.pid)
        let burns = 10
        for number in 0..<(3 * burns + 12) {
            let burn = number % 3 == 2 && number < 3 * burns
            #expect(Self.request(port, path: burn ? "/burn" : "/"))
            usleep(20_000)
        }
        usleep(200_000)
        let after = Self.cpuTimes(server.process.pid)
        rlctl.send(SIGINT)
        let recorded = rlctl.wait()
        try #require(recorded.status == 0, "\(recorded.termination): \(recorded.stderr)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(recorded.stdout.utf8)) as? [String: Any])
        let waits = try #require(summary["waits"] as? [String: Any])
        let set = try #require((waits["sets"] as? [[String: Any]])?.first, "no wait set: \(recorded.stdout.prefix(600))")
        #expect((set["threads"] as? [Int])?.count ?? 0 >= 2)
        // Every burn is a stall of about 40 ms (a burn runs 40 ms of wall time: on a loaded machine part of it is the
        // wait for a CPU, which the kernel view says). Any other stall must be one that wait explains.
        #expect(set["stalls"] as? Int ?? 0 >= burns, "\(burns) burns of 40 ms, stalls: \(set["stalls"] ?? "none")")
        let burnStalls = Self.burnStalls(set["worstStalls"] as? [[String: Any]] ?? [])
        #expect(burnStalls == burns, "\(burns) burns of 40 ms, \(burnStalls) stalls of them: \(set["worstStalls"] ?? "none")")
        // Each thread that ran a burn (40 ms on a CPU or more: below that, a few ms of the attach's own moment, before the
        // test reads the counts, weigh more than 5%): busy (between its waits, parked time left out) against its CPU time.
        var compared = 0
        for loop in try AnyProgramTests.waitLoops(waits) {
            guard let tid = loop["threadID"] as? Int, let busy = loop["busyNanoseconds"] as? Int,
                  let start = before[Int32(tid)], let end = after[Int32(tid)], end - start >= 40_000_000 else { continue }
            // On 2 cores the test and rlctl run beside the server: the time a thread waited for a CPU (which the kernel
            // view measured) is busy and not CPU time.
            let split = (loop["kernel"] as? [String: Any])?["busy"] as? [String: Any]
            let queued = Double((split?["runQueueNanoseconds"] as? Int ?? 0) + (split?["throttledNanoseconds"] as? Int ?? 0))
            let cpu = Double(end - start)
            #expect(abs(Double(busy) - queued - cpu) <= 0.05 * cpu + 3_000_000,
                    "thread \(tid): busy \(busy) ns (\(Int(queued)) ns of it waiting for a CPU), on a CPU \(Int(cpu)) ns: \(loop)")
            compared += 1
        }
        #expect(compared >= 1, "no thread of the Go server worked 40 ms: \(before) → \(after)")
    }

    /// How many burns of 40 ms (of wall time: a loaded machine makes part of one the wait for a CPU) `stalls` (a wait
    /// set's worst, with their kernel splits) hold: a stall of 39 ms or more, whose time the CPU and the wait for it
    /// explain, holds round(busy / 40 ms) (a thread that ran two burns back to back has one stall of 80 ms), but no
    /// more than its time on a CPU allows (CI saw a burn's stall of 61 ms, 43 of them waiting for a CPU: one burn);
    /// any shorter stall must be mostly the wait for a CPU, never the program's own work.
    static func burnStalls(_ stalls: [[String: Any]], sourceLocation: SourceLocation = #_sourceLocation) -> Int {
        var burns = 0
        for stall in stalls {
            let busy = stall["busyNanoseconds"] as? Int ?? 0
            let kernel = stall["kernel"] as? [String: Any] ?? [:]
            let onCPU = kernel["onCPUNanoseconds"] as? Int ?? 0, queued = kernel["runQueueNanoseconds"] as? Int ?? 0
            if busy >= 39_000_000 {
                #expect(onCPU + queued + 2_000_000 >= busy, "a burn's stall not on a CPU or waiting for one: \(stall)", sourceLocation: sourceLocation)
                let byTime = Int((Double(busy) / 40_000_000).rounded())
                burns += min(byTime, max(1, Int((Double(onCPU + 20_000_000) / 40_000_000).rounded())))
            } else {
                #expect(queued > busy / 2, "a stall that was no burn, not explained by the wait for a CPU: \(stall)", sourceLocation: sourceLocation)
            }
        }
        return burns
    }

    /// A thread inside a wait when rlctl attaches: the loop says so, and that wait is no sleep of known length.
    /// The program ending ends the recording, with its summary.
    @Test(.enabled(if: python.shouldRun, python.skipComment))
    func aWaitInProgressAtTheAttachIsMarkedAndTheProgramsEndEndsTheRecording() throws {
        guard Self.python.requireMet() else { return }
        // Waits of 400 ms, then 1 ms of work, for 3 s: rlctl attaches in the middle of a wait.
        let script = """
            import selectors, time, os
            sel = selectors.DefaultSelector(); r, w = os.pipe(); sel.register(r, selectors.EVENT_READ)
            end = time.monotonic() + 3
            while time.monotonic() < end:
                sel.select(timeout=0.4)
                t = time.perf_counter()
                while time.perf_counter() - t < 0.001: pass
            """
        let program = try Program(TestEnvironment.executable("python3")!, ["-c", script])
        usleep(200_000)
        let recorded = try CLI.run(["record", "--pid", "\(program.process.pid)", "--format", "json"])
        try #require(recorded.status == 0, "\(recorded.termination): \(recorded.stderr)")
        #expect(recorded.stderr.contains("detached (when the processes ended)"), "\(recorded.stderr)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(recorded.stdout.utf8)) as? [String: Any])
        let loop = try AnyProgramTests.busiestLoop(in: summary)
        #expect(loop["waitingAtStart"] as? Bool == true, "\(loop)")
        #expect(loop["family"] as? String == "epoll")
        let sleep = try #require(loop["sleepNanoseconds"] as? Int), waits = try #require(loop["waits"] as? Int)
        #expect(waits >= 4 && sleep >= (waits - 1) * 390_000_000 && sleep <= waits * 420_000_000, "\(waits) waits, \(sleep) ns asleep")
    }

    /// What cannot be attached to is a one-line error before anything is loaded, with status 2.
    @Test func whatCannotBeAttachedToIsAOneLineError() throws {
        func attach(_ arguments: [String]) throws -> ProcessOutput { try CLI.run(["record"] + arguments) }
        func expectError(_ result: ProcessOutput, _ words: String, sourceLocation: SourceLocation = #_sourceLocation) {
            #expect(result.status == 2 && result.stdout.isEmpty, "\(result.stdout)", sourceLocation: sourceLocation)
            let lines = result.stderr.split(separator: "\n")
            #expect(lines.count == 1 && lines.first?.contains(words) == true, "\(result.stderr)", sourceLocation: sourceLocation)
        }
        // A pid no process has (the highest possible one, never given out here).
        let maximum = (try? String(contentsOfFile: "/proc/sys/kernel/pid_max", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "4194304"
        expectError(try attach(["--pid", maximum]), "no such process")
        expectError(try attach(["--pid", "2"]), "kernel thread")   // kthreadd
        expectError(try attach(["--pid", "-5"]), "positive")
        // rlctl itself: the shell's pid becomes rlctl's through exec.
        let own = try runProcess("/bin/sh", ["-c", "exec \"$0\" record --pid $$", CLI.binary])
        expectError(own, "this rlctl itself")
        expectError(try attach(["--pid", "1", "--", "sleep", "1"]), "give no program")
        expectError(try attach(["--pid", "1", "--kernel", "off"]), "not with --kernel off")
        expectError(try attach(["--duration", "1s", "--", "true"]), "--duration goes with --pid")
        expectError(try attach(["--pid", "1", "--any"]), "not with --any or --any-via")
    }

    /// Not root: one line saying the kernel view needs it, before anything is attached.
    @Test func withoutPrivilegeTheAttachIsRefusedInOneLine() throws {
        guard let setpriv = TestEnvironment.executable("setpriv") else {
            Issue.record("setpriv (util-linux) is missing")
            return
        }
        let result = try RunningProcess(setpriv, ["--reuid=65534", "--regid=65534", "--clear-groups", CLI.binary, "record", "--pid", "1"],
                                        ProcessOptions(environment: ["TMPDIR": "/tmp"], timeout: .seconds(60))).wait()
        #expect(result.status == 2 && result.stdout.isEmpty)
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 1 && lines[0].contains("--pid attaches through the kernel view") && lines[0].contains("root"), "\(result.stderr)")
    }

    /// Two rlctl attached to one process at once each record it whole, apart; a process that execs goes on being
    /// recorded, under its new name.
    @Test(.enabled(if: python.shouldRun, python.skipComment))
    func twoAttachesAtOnceAndAnExecAreEachRecordedWhole() throws {
        guard Self.python.requireMet() else { return }
        // 5 ms waits for 1 s, then the process execs into the same loop, which names its thread after-exec, for 1.5 s.
        let script = """
            import os, select, sys, time
            end = time.monotonic() + float(sys.argv[1])
            while time.monotonic() < end: select.select([], [], [], 0.005)
            if sys.argv[2] == "exec":
                os.execv(sys.executable, [sys.executable, "-c", "import ctypes, select, time\\nctypes.CDLL(None).prctl(15, b'after-exec')\\nend = time.monotonic() + 1.5\\nwhile time.monotonic() < end: select.select([], [], [], 0.005)"])
            """
        let program = try Program(TestEnvironment.executable("python3")!, ["-c", script, "1.0", "exec"])
        usleep(200_000)
        let first = try CLI.start(["record", "--pid", "\(program.process.pid)", "--format", "json"])
        let second = try CLI.start(["record", "--pid", "\(program.process.pid)", "--format", "json"])
        for rlctl in [first, second] {
            let recorded = rlctl.wait()
            try #require(recorded.status == 0, "\(recorded.termination): \(recorded.stderr)")
            let summary = try #require(try JSONSerialization.jsonObject(with: Data(recorded.stdout.utf8)) as? [String: Any])
            let loops = try AnyProgramTests.waitLoops(try #require(summary["waits"] as? [String: Any]))
            let waits = loops.reduce(0) { $0 + ($1["waits"] as? Int ?? 0) }
            // About 400 waits of 5 ms in 2.3 s (each attach began a little later than the program).
            #expect(waits >= 250, "\(waits) waits: \(loops)")
            #expect((summary["health"] as? [String: Any])?["eventsLost"] as? Int == 0)
            #expect(recorded.stdout.contains("after-exec"), "the thread's new name after the exec is missing")
        }
    }

    /// rlctl killed by SIGKILL while attached leaves nothing loaded in the kernel, and the program runs on.
    @Test(.enabled(if: python.shouldRun, python.skipComment))
    func aKilledRlctlLeavesNothingAttached() throws {
        guard Self.python.requireMet() else { return }
        let program = try Program(TestEnvironment.executable("python3")!,
                                  ["-c", "import select, time\nwhile True: select.select([], [], [], 0.005)"])
        let rlctl = try CLI.start(["record", "--pid", "\(program.process.pid)"])
        try Self.waitUntilAttached(rlctl)
        let held = Self.waitPrograms(heldBy: rlctl.pid)
        #expect(!held.isEmpty, "the probe is not loaded while attached")
        rlctl.send(SIGKILL)
        _ = rlctl.wait()
        #expect(Self.leftLoaded(held).isEmpty, "left loaded: \(Self.leftLoaded(held))")
        #expect(program.process.isRunning, "the attached program did not survive")
    }
}
