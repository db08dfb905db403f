import Foundation
import Glibc
import Testing
import TestSupport

/// `rlctl record --any` end to end, on programs nobody here wrote (Node.js, Python's asyncio, redis-server) and on
/// our own: rlctl's figures against the programs' own meters.
@Suite(.serialized) struct AnyProgramTests {
    static let programs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("AnyPrograms").path

    static func requirement(_ tools: [String]) -> TestRequirement {
        let missing = tools.filter { TestEnvironment.executable($0) == nil }
        return TestRequirement(missing: missing.isEmpty ? nil : missing.joined(separator: ", "),
                               problem: "the programs `rlctl record --any` is tested on are not installed")
    }
    static let node = requirement(["node", "wrk"])
    static let python = requirement(["python3"])
    static let redis = requirement(["redis-server", "redis-benchmark"])
    static let compiler = requirement(["cc"])

    // ===== Node.js: utilization against performance.eventLoopUtilization(), and every burn a stall =====

    @Test(.enabled(if: node.shouldRun, node.skipComment))
    func nodesLoopUtilizationAgreesWithNodesOwnMeterAndEveryBurnIsAStall() throws {
        guard Self.node.requireMet() else { return }
        let trace = temporaryPath("node-any.rltrace"), report = temporaryPath("node-elu.json")
        let port = Self.freePort()
        // A 60 ms burn every 250 ms on the loop, under wrk's load, for 4 s.
        let rlctl = try CLI.start(["record", "--any", "--tracer", "embedded", "--output", trace, "--",
                                   "node", "\(Self.programs)/node-server.js", "\(port)", "4", "250", "60", report])
        try #require(Self.waitForPort(port), "node did not listen on \(port)")
        let wrk = try runProcess(TestEnvironment.executable("wrk")!, ["-t1", "-c8", "-d2s", "http://127.0.0.1:\(port)/"])
        #expect(wrk.status == 0, "\(wrk.stderr)")
        let recorded = rlctl.wait()
        try #require(recorded.status == 0, "\(recorded.termination): \(recorded.stderr)")

        let own = try Self.json(report)
        let pid = try #require(own["pid"] as? Int)
        let loop = try Self.waitLoop(in: try Self.summary(trace, stall: "30ms"), pid: pid, threadID: pid)
        let ours = try #require(loop["utilization"] as? Double), nodes = try #require(own["utilization"] as? Double)
        #expect(abs(ours - nodes) <= 0.02, "rlctl: \(ours), Node's eventLoopUtilization: \(nodes)")
        let burns = try #require(own["burns"] as? Int)
        #expect(burns >= 10)
        let stalls = try #require(loop["stalls"] as? Int)
        #expect(stalls >= burns, "\(burns) burns of 60 ms, \(stalls) stalls over 30 ms")
        let worst = try #require((loop["worstStalls"] as? [[String: Any]])?.first?["busyNanoseconds"] as? Int)
        #expect(worst >= 60_000_000)
    }

    // ===== Python asyncio: iterations and wake lateness against what the program logs =====

    @Test(.enabled(if: python.shouldRun, python.skipComment))
    func asyncioIterationsAndWakeLatenessMatchWhatTheProgramLogs() throws {
        guard Self.python.requireMet() else { return }
        let trace = temporaryPath("asyncio-any.rltrace"), report = temporaryPath("asyncio.json")
        let recorded = try CLI.run(["record", "--any", "--tracer", "embedded", "--output", trace, "--",
                                    "python3", "\(Self.programs)/asyncio-timers.py", "40", "20", report])
        try #require(recorded.status == 0, "\(recorded.termination): \(recorded.stderr)")
        let own = try Self.json(report)
        let summary = try Self.summary(trace)
        let loop = try Self.busiestLoop(in: summary)
        // Every _run_once is one wait on the selector's epoll descriptor.
        #expect(loop["waits"] as? Int == own["iterations"] as? Int, "rlctl's waits: \(loop["waits"] ?? "none"), asyncio's _run_once calls: \(own["iterations"] ?? "none")")
        let causes = try #require(loop["wakeCauses"] as? [String: Any])
        #expect((causes["timedOut"] as? Int ?? 0) >= 40, "each of the 40 timers wakes the loop by its timeout: \(causes)")
        // asyncio rounds each timeout up to the next millisecond and runs the timer after the wait: its own
        // lateness is the loop's wake lateness plus less than 1 ms of rounding.
        let logged = try #require(own["lateness_ms"] as? [Double]).sorted()
        let latenessMedian = try #require((loop["lateness"] as? [String: Any]).flatMap(Self.median)) / 1e6
        let programMedian = logged[logged.count / 2]
        #expect(latenessMedian >= 0 && latenessMedian <= programMedian + 0.25, "rlctl's median wake lateness \(latenessMedian) ms, asyncio's median timer lateness \(programMedian) ms")
        #expect(programMedian - latenessMedian <= 1.5, "rlctl's median wake lateness \(latenessMedian) ms, asyncio's median timer lateness \(programMedian) ms")
    }

    /// The same program recorded through LTTng: the interposer emits through the `runloop` provider, and the
    /// session (tracking the program's process) holds the same waits.
    @Test(.enabled(if: python.shouldRun && LTTngCLIEnvironment.shouldRun, LTTngCLIEnvironment.skipComment))
    func asyncioRecordedWithLTTngHasTheSameWaits() throws {
        guard Self.python.requireMet(), LTTngCLIEnvironment.requirement.requireMet() else { return }
        let trace = temporaryPath("asyncio-lttng.rltrace"), report = temporaryPath("asyncio-lttng.json")
        let recorded = try CLI.run(["record", "--any", "--tracer", "lttng", "--output", trace, "--",
                                    "python3", "\(Self.programs)/asyncio-timers.py", "20", "10", report])
        try #require(recorded.status == 0, "\(recorded.termination): \(recorded.stderr)")
        #expect(recorded.stdout.contains("LTTng, any program (wait interposer)"), "\(recorded.stdout)")
        let own = try Self.json(report)
        let loop = try Self.busiestLoop(in: try Self.summary(trace))
        #expect(loop["waits"] as? Int == own["iterations"] as? Int, "rlctl's waits: \(loop["waits"] ?? "none"), asyncio's _run_once calls: \(own["iterations"] ?? "none")")
    }

    /// LTTng carries the waits in batches (runloop:wait_batch, 32 waits to an event): every wait of threads that
    /// exit, of a forked child, of a thread still blocked when the process execs, and of the exec'd image arrives
    /// whole and in order, the same waits the embedded recorder's trace holds wait by wait.
    @Test(.enabled(if: python.shouldRun && LTTngCLIEnvironment.shouldRun, LTTngCLIEnvironment.skipComment))
    func lttngBatchesCarryTheWaitsOfTheEmbeddedTrace() throws {
        guard Self.python.requireMet(), LTTngCLIEnvironment.requirement.requireMet() else { return }
        // Its LTTng recording follows children, so it records every process: no other test's flood meanwhile.
        lttngSessionLock.lock()
        defer { lttngSessionLock.unlock() }
        /// Each thread's waits (timeout, ready, error, whether it returned), threads in a stable order.
        func waitsByThread(_ tracer: String) throws -> [[String]] {
            let trace = temporaryPath("wait-shapes-\(tracer).rltrace"), rows = temporaryPath("wait-shapes-\(tracer).jsonl")
            let pidFile = temporaryPath("wait-shapes-\(tracer).pid")
            let recorded = try CLI.run(["record", "--any", "--follow-children", "--tracer", tracer, "--output", trace, "--",
                                        "python3", "\(Self.programs)/wait-shapes.py", "first", pidFile])
            try #require(recorded.status == 0, "\(recorded.termination): \(recorded.stderr)")
            // Nothing lost (a session that follows children records every process: another program's loop may
            // be cut off in it, which is not this program's concern).
            #expect(!recorded.stdout.contains("packets lost in"), "\(recorded.stdout.prefix(600))")
            let exported = try CLI.run(["export", trace, "--format", "jsonl", "--output", rows])
            try #require(exported.status == 0, "\(exported.stderr)")
            let root = try #require(Int(try String(contentsOfFile: pidFile, encoding: .utf8)))
            var threads: [Int: (waits: [String], open: [String: Any]?, last: Int)] = [:]
            // The program's threads and its child's (a session that follows children may see other programs too).
            var ours: Set<Int> = []
            for line in try String(contentsOfFile: rows, encoding: .utf8).split(separator: "\n") {
                let row = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
                let thread = try #require(row["thread_id"] as? Int), time = try #require(row["timestamp_ns"] as? Int)
                if row["event"] as? String == "wait_thread", row["pid"] as? Int == root || row["ppid"] as? Int == root { ours.insert(thread) }
                guard ours.contains(thread) else { continue }
                var state = threads[thread] ?? ([], nil, 0)
                switch row["event"] as? String {
                case "wait_begin":
                    #expect(state.open == nil, "thread \(thread): a wait began before the last one ended")
                    state.open = row
                case "wait_end":
                    let begin = try #require(state.open, "thread \(thread): a wait ended that had not begun")
                    // Not the descriptor's number: LTTng's library holds descriptors of its own.
                    state.waits.append("\(begin["timeout_ns"] ?? "?") \(row["ready"] ?? "?") \(row["error"] ?? "?")")
                    state.open = nil
                default: continue
                }
                // A thread's waits come in its order, each after the one before.
                #expect(time >= state.last, "thread \(thread): \(row["event"] ?? "") at \(time), before \(state.last)")
                state.last = time
                threads[thread] = state
            }
            return threads.values.map { $0.waits + ($0.open.map { ["still waiting, timeout \($0["timeout_ns"] ?? "?")"] } ?? []) }
                .sorted { ($0.count, $0.joined()) < ($1.count, $1.joined()) }
        }
        let embedded = try waitsByThread("embedded"), lttng = try waitsByThread("lttng")
        // Four workers (40, 47, 54, 61 waits), the main thread (108 waits, then the exec'd image's 45), the child
        // (33), and the thread blocked at the exec.
        #expect(embedded.map(\.count) == [1, 33, 40, 47, 54, 61, 153], "\(embedded.map(\.count))")
        #expect(lttng.map(\.count) == embedded.map(\.count))
        #expect(lttng == embedded, "the waits differ (printed above by count)")
    }

    /// Threads that start, wait and exit in waves while the flusher sends batches, every millisecond here: every
    /// wait of every thread arrives, once, in its thread's order (the batches' hand-over between a thread, its exit
    /// and the flusher).
    @Test(.enabled(if: compiler.shouldRun && LTTngCLIEnvironment.shouldRun, LTTngCLIEnvironment.skipComment))
    func lttngBatchesOfThreadsThatComeAndGoAreWhole() throws {
        guard Self.compiler.requireMet(), LTTngCLIEnvironment.requirement.requireMet() else { return }
        let program = try Self.compile("wait-storm.c", flags: ["-pthread"])
        let waves = 150, threads = 8
        let trace = temporaryPath("wait-storm.rltrace"), rows = temporaryPath("wait-storm.jsonl")
        let recorded = try CLI.run(["record", "--any", "--tracer", "lttng", "--subbuf-size", "4M", "--num-subbuf", "8",
                                    "--output", trace, "--", program, "\(waves)", "\(threads)"],
                                   environment: ["RLCTL_ANY_FLUSH_INTERVAL_MS": "1"])
        try #require(recorded.status == 0, "\(recorded.termination): \(recorded.stderr)")
        try #require(!recorded.stdout.contains("packets lost in"), "LTTng lost events: the counts below would not hold\n\(recorded.stdout.prefix(600))")
        let exported = try CLI.run(["export", trace, "--format", "jsonl", "--output", rows])
        try #require(exported.status == 0, "\(exported.stderr)")
        var perThread: [Int: (begins: Int, ends: Int, last: Int, disorder: Int)] = [:]
        for line in try String(contentsOfFile: rows, encoding: .utf8).split(separator: "\n") {
            let row = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let event = row["event"] as? String
            guard event == "wait_begin" || event == "wait_end" else { continue }
            let thread = try #require(row["thread_id"] as? Int), time = try #require(row["timestamp_ns"] as? Int)
            var counts = perThread[thread] ?? (0, 0, 0, 0)
            if event == "wait_begin" { counts.begins += 1 } else { counts.ends += 1 }
            if time < counts.last { counts.disorder += 1 }
            counts.last = time
            perThread[thread] = counts
        }
        // Each worker: 37 + i waits; the main thread: 3 per wave and 100 at the end.
        let expected = ((0..<waves).flatMap { _ in (0..<threads).map { 37 + $0 } } + [waves * 3 + 100]).sorted()
        #expect(perThread.values.map(\.begins).sorted() == expected)
        #expect(perThread.values.allSatisfy { $0.begins == $0.ends }, "every wait ended")
        #expect(perThread.values.map(\.disorder).reduce(0, +) == 0, "a thread's waits in its order")
    }

    /// A signal handler that waits while its thread is blocked in a wait (async-signal-safe, and done): through
    /// LTTng the handler's wait cannot share the open wait's place in the batch, so it is left out and counted, and
    /// the interrupted waits are recorded whole, on their own descriptor (they used to take the handler's fields).
    @Test(.enabled(if: compiler.shouldRun && LTTngCLIEnvironment.shouldRun, LTTngCLIEnvironment.skipComment))
    func aSignalHandlersWaitInsideAWaitIsCountedNotMixedIn() throws {
        guard Self.compiler.requireMet(), LTTngCLIEnvironment.requirement.requireMet() else { return }
        let program = try Self.compile("wait-signals.c")
        let trace = temporaryPath("wait-signals.rltrace")
        let recorded = try CLI.run(["record", "--any", "--tracer", "lttng", "--output", trace, "--", program, "300"], timeout: .seconds(60))
        try #require(recorded.status == 0, "\(recorded.termination): \(recorded.stderr)")
        let printed = try #require(recorded.stdout.firstMatch(of: /outer (\d+) handled (\d+) ep (\d+)/), "\(recorded.stdout.prefix(400))")
        let outer = Int(printed.1)!, handled = Int(printed.2)!, ep = Int(printed.3)!
        #expect(recorded.stderr.contains("rlctl: the recorded processes dropped \(handled) events"), "\(recorded.stderr)")
        let loops = try Self.waitLoops(try Self.summary(trace))
        #expect(loops.count == 1, "the handler's polls make no loop of their own: \(loops.map { $0["target"] ?? "?" })")
        let loop = try #require(loops.first)
        #expect(loop["target"] as? Int == ep && loop["waits"] as? Int == outer, "\(loop["target"] ?? "?") \(loop["waits"] ?? "?")")
    }

    // ===== redis-server: iterations, ready events per wake-up and utilization rise with load =====

    @Test(.enabled(if: redis.shouldRun, redis.skipComment))
    func redisLoopRisesWithLoad() throws {
        guard Self.redis.requireMet() else { return }
        func record(load: Bool) throws -> [String: Any] {
            let trace = temporaryPath(load ? "redis-loaded.rltrace" : "redis-idle.rltrace")
            let port = Self.freePort()
            let rlctl = try CLI.start(["record", "--any", "--tracer", "embedded", "--output", trace, "--",
                                       "redis-server", "--port", "\(port)", "--save", "", "--appendonly", "no", "--bind", "127.0.0.1"])
            try #require(Self.waitForPort(port), "redis-server did not listen on \(port)")
            if load {
                let bench = try runProcess(TestEnvironment.executable("redis-benchmark")!,
                                           ["-p", "\(port)", "-n", "20000", "-c", "20", "-q", "-t", "set,get"])
                #expect(bench.status == 0, "\(bench.stderr)")
            } else {
                usleep(1_500_000)
            }
            rlctl.send(SIGTERM)   // passed on to redis-server, which shuts down cleanly
            let recorded = rlctl.wait()
            try #require(recorded.status == 0, "\(recorded.termination): \(recorded.stderr)")
            return try Self.busiestLoop(in: try Self.summary(trace))
        }
        let idle = try record(load: false), loaded = try record(load: true)
        let idleIterations = try #require(idle["iterations"] as? Int), loadedIterations = try #require(loaded["iterations"] as? Int)
        #expect(loadedIterations > 10 * max(idleIterations, 1), "iterations idle \(idleIterations), loaded \(loadedIterations)")
        let idleReady = (idle["readyPerWakeUp"] as? [String: Any]).flatMap(Self.maximum) ?? 0
        let loadedReady = try #require((loaded["readyPerWakeUp"] as? [String: Any]).flatMap(Self.maximum))
        #expect(loadedReady > idleReady, "most ready events per wake-up: idle \(idleReady), loaded \(loadedReady)")
        let idleUse = try #require(idle["utilization"] as? Double), loadedUse = try #require(loaded["utilization"] as? Double)
        #expect(loadedUse > idleUse, "utilization idle \(idleUse), loaded \(loadedUse)")
    }

    // ===== a RunLoopCore program recorded both ways at once =====

    @Test func aRunLoopCoreProgramRecordedBothWaysAgrees() throws {
        let own = temporaryPath("demo-own.rltrace"), any = temporaryPath("demo-any.rltrace")
        // env puts the program's own tracer back in its environment (rlctl --any takes it out) and execs it:
        // the same process, recorded by its own sink and by the interposer, into two traces.
        let recorded = try CLI.run(["record", "--any", "--tracer", "embedded", "--output", any, "--",
                                    "env", "RLCTL_TRACER=embedded", "RLCTL_TRACE_DIR=\(own)", CLI.sibling("runloop-demo"), "1"])
        try #require(recorded.status == 0, "\(recorded.termination): \(recorded.stderr)")
        let loop = try Self.busiestLoop(in: try Self.summary(any))
        let ownSummary = try Self.summaryObject(own)
        let runLoop = try #require((ownSummary["loops"] as? [[String: Any]])?.first)
        let iterations = try #require(runLoop["iterations"] as? Int)
        let waits = try #require(loop["waits"] as? Int)
        // RunLoopCore makes one epoll_wait per iteration (README: "One epoll_wait per iteration").
        #expect(waits == iterations, "RunLoopCore's iterations \(iterations), waits seen by the interposer \(waits)")
    }

    // ===== what cannot be recorded, said before or after =====

    @Test func aProgramThatIsNotThereIsAUsageError() throws {
        try expectUsageError(["record", "--any", "--", "no-such-program-rlctl"], "no-such-program-rlctl: no such program (not a file, and not found in PATH)")
    }

    /// Not following, the programs the recorded one starts get neither the interposer nor its variables: what the
    /// recorded program's own exec still gets (aRunLoopCoreProgramRecordedBothWaysAgrees) stays its own.
    @Test func aChildSeesTheInterposersVariablesOnlyWhenFollowed() throws {
        func childEnvironment(_ flags: [String]) throws -> [String] {
            let listing = temporaryPath("child-environment"), trace = temporaryPath("child-environment.rltrace")
            defer { for path in [listing, trace] { try? FileManager.default.removeItem(atPath: path) } }
            // `; true` keeps sh from exec'ing env in its own process: env is sh's child.
            let recorded = try CLI.run(["record", "--any", "--tracer", "embedded", "--output", trace] + flags + ["--", "sh", "-c", "env > '\(listing)'; true"])
            #expect(recorded.status == 0 || recorded.status == 3, "\(recorded.termination): \(recorded.stderr)")
            return try String(contentsOfFile: listing, encoding: .utf8).split(separator: "\n").map(String.init)
                .filter { $0.hasPrefix("RLCTL_") || ($0.hasPrefix("LD_PRELOAD=") && $0.contains("wait-interposer")) }
        }
        let unfollowed = try childEnvironment([])
        #expect(unfollowed.isEmpty, "\(unfollowed)")
        let followed = try childEnvironment(["--follow-children"])
        #expect(followed.contains { $0.hasPrefix("RLCTL_ANY_TRACE_DIR=") } && followed.contains { $0.hasPrefix("LD_PRELOAD=") }, "\(followed)")
    }

    @Test func aThirtyTwoBitProgramIsRefusedBeforeItStarts() throws {
        // The header of a 32-bit x86 ELF executable: all rlctl reads before refusing it.
        var header = [UInt8](repeating: 0, count: 64)
        header[0...6] = [0x7F, 0x45, 0x4C, 0x46, 1, 1, 1]
        header[16] = 2; header[18] = 3
        let path = temporaryPath("elf32")
        _ = FileManager.default.createFile(atPath: path, contents: Data(header), attributes: [.posixPermissions: 0o755])
        let result = try CLI.run(["record", "--any", "--", path])
        #expect(result.status == 2)
        #expect(result.stderr.contains("is a 32-bit program"), "\(result.stderr)")
    }

    @Test(.enabled(if: compiler.shouldRun, compiler.skipComment))
    func aStaticProgramIsRefusedBeforeItStarts() throws {
        guard Self.compiler.requireMet() else { return }
        let program = try Self.compile("raw-syscall-waits.c", flags: ["-static"])
        // (By the interposer alone: the kernel records it otherwise, AnyViaTests.)
        let result = try CLI.run(["record", "--any", "--any-via", "preload", "--", program])
        #expect(result.status == 2)
        #expect(result.stderr.contains("is statically linked"), "\(result.stderr)")
    }

    @Test(.enabled(if: compiler.shouldRun, compiler.skipComment))
    func aProgramThatWaitsWithRawSystemCallsShowsNoLoopAndRlctlSaysWhy() throws {
        guard Self.compiler.requireMet() else { return }
        let program = try Self.compile("raw-syscall-waits.c")
        let result = try CLI.run(["record", "--any", "--any-via", "preload", "--", program])
        #expect(result.status == 3, "\(result.termination): \(result.stderr)")
        #expect(result.stderr.contains("raw system calls"), "\(result.stderr)")
        #expect(result.stdout.isEmpty)
    }

    @Test(.enabled(if: compiler.shouldRun, compiler.skipComment))
    func aProgramKilledMidRunLeavesAReadableTraceMarkedCutOff() throws {
        guard Self.compiler.requireMet() else { return }
        let program = try Self.compile("killed-mid-run.c")
        let trace = temporaryPath("killed.rltrace")
        let result = try CLI.run(["record", "--any", "--tracer", "embedded", "--output", trace, "--format", "json", "--", program])
        #expect(result.status == 1, "\(result.termination): \(result.stderr)")
        #expect(result.stderr.contains("did not complete its recording"), "\(result.stderr)")
        let summary = try Self.summaryObject(trace)
        #expect((summary["health"] as? [String: Any])?["recordingCutOff"] as? Bool == true)
        // 30 waits of 10 ms, then SIGKILL after 400 ms: the switch interval (100 ms) wrote at least the first ones.
        let loop = try Self.busiestLoop(in: summary)
        #expect((loop["waits"] as? Int ?? 0) >= 10, "\(loop)")
    }

    /// The same through LTTng: the waits the flusher sent before the kill are in the trace, the summary says the
    /// recording was cut off (the trace itself cannot: the process's markers tell rlctl).
    @Test(.enabled(if: compiler.shouldRun && LTTngCLIEnvironment.shouldRun, LTTngCLIEnvironment.skipComment))
    func aProgramKilledMidRunThroughLTTngIsCutOffToo() throws {
        guard Self.compiler.requireMet(), LTTngCLIEnvironment.requirement.requireMet() else { return }
        let program = try Self.compile("killed-mid-run.c")
        let trace = temporaryPath("killed-lttng.rltrace")
        let result = try CLI.run(["record", "--any", "--tracer", "lttng", "--output", trace, "--format", "json", "--", program])
        #expect(result.status == 1, "\(result.termination): \(result.stderr)")
        #expect(result.stderr.contains("did not complete its recording"), "\(result.stderr)")
        let printed = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(result.stdout.prefix(300))")
        #expect((printed["health"] as? [String: Any])?["recordingCutOff"] as? Bool == true, "\(printed["health"] ?? "no health")")
        let loop = try Self.busiestLoop(in: try Self.summary(trace))
        #expect((loop["waits"] as? Int ?? 0) >= 10, "\(loop)")
    }

    @Test(.enabled(if: python.shouldRun, python.skipComment))
    func childrenAreRecordedOnlyWhenFollowed() throws {
        guard Self.python.requireMet() else { return }
        let report = temporaryPath("child.json")
        // `; true` keeps sh from exec'ing python3 in its own process: python3 is sh's child.
        let script = "python3 \(Self.programs)/asyncio-timers.py 5 10 \(report); true"
        let unfollowed = try CLI.run(["record", "--any", "--", "sh", "-c", script])
        #expect(unfollowed.status == 3, "\(unfollowed.termination): \(unfollowed.stderr)")
        #expect(unfollowed.stderr.contains("without a single wait"), "\(unfollowed.stderr)")
        #expect(unfollowed.stderr.contains("record them too with --follow-children"), "\(unfollowed.stderr)")
        let trace = temporaryPath("followed.rltrace")
        let followed = try CLI.run(["record", "--any", "--follow-children", "--tracer", "embedded", "--output", trace, "--", "sh", "-c", script])
        try #require(followed.status == 0, "\(followed.termination): \(followed.stderr)")
        let loop = try Self.busiestLoop(in: try Self.summary(trace))
        #expect(loop["process"] as? String == "python3", "\(loop)")
    }

    // ===== helpers =====

    /// `libraries` come after the source, where the linker looks for what it needs.
    static func compile(_ source: String, flags: [String] = [], libraries: [String] = []) throws -> String {
        let output = temporaryPath((source as NSString).deletingPathExtension)
        let result = try runProcess(TestEnvironment.executable("cc")!, flags + ["-O1", "-o", output, "\(programs)/\(source)"] + libraries)
        try #require(result.status == 0, "cc \(source): \(result.stderr)")
        return output
    }

    static func summaryObject(_ trace: String, stall: String = "16ms") throws -> [String: Any] {
        let result = try CLI.run(["summarize", trace, "--format", "json", "--stall", stall])
        try #require(result.status == 0, "summarize \(trace): \(result.stderr)")
        return try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
    }

    /// The trace's wait summary.
    static func summary(_ trace: String, stall: String = "16ms") throws -> [String: Any] {
        try #require(try summaryObject(trace, stall: stall)["waits"] as? [String: Any], "no wait loop in \(trace)")
    }

    static func waitLoops(_ waits: [String: Any]) throws -> [[String: Any]] {
        try #require(waits["loops"] as? [[String: Any]])
    }

    /// The first (busiest) wait loop, or the summary's own.
    static func busiestLoop(in summary: [String: Any]) throws -> [String: Any] {
        let waits = (summary["waits"] as? [String: Any]) ?? summary
        return try #require(try waitLoops(waits).first, "no wait loop: \(waits)")
    }

    static func waitLoop(in waits: [String: Any], pid: Int, threadID: Int) throws -> [String: Any] {
        try #require(try waitLoops(waits).first { $0["pid"] as? Int == pid && $0["threadID"] as? Int == threadID },
                     "no wait loop on thread \(threadID) of \(pid): \(waits)")
    }

    static func json(_ path: String) throws -> [String: Any] {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    static func median(_ distribution: [String: Any]) -> Double? { number(distribution, ["p50Nanoseconds", "p50", "median"]) }
    static func maximum(_ distribution: [String: Any]) -> Double? { number(distribution, ["maxNanoseconds", "max", "maximum"]) }
    private static func number(_ distribution: [String: Any], _ keys: [String]) -> Double? {
        for key in keys { if let value = distribution[key] as? Double { return value } }
        return nil
    }

    /// A TCP port free on loopback right now.
    static func freePort() -> Int { freeLoopbackPort() }

    /// Waits until something accepts connections on the loopback port.
    static func waitForPort(_ port: Int, timeout: Duration = .seconds(20)) -> Bool {
        eventually(timeout: timeout) {
            let fd = connectLoopback(port)
            if fd < 0 { usleep(20_000) } else { close(fd) }
            return fd >= 0
        }
    }

    /// A TCP connection to the loopback port, or -1.
    static func connectLoopback(_ port: Int) -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
        if !connected { close(fd) }
        return connected ? fd : -1
    }
}
